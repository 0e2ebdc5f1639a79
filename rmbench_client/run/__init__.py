"""One run: a benchmark's prompts scored through a model kind into the store, and the run's outputs written.

- `runner`: the run from start to end (dataset, units not yet stored, scoring, samples, summary).
- `scoring_loop`: the start-up checks and the scoring loop the one-process run and each worker share.
- `workers`: `run --workers N`, N scoring processes over one run directory.
- `score_store`: the durable store (SQLite: key -> raw value, model epochs).
- `planning`: `run --dry-run`, what a run would send.
- `interrupts`: SIGINT, SIGTERM and cancellation in every phase of a run.
- `event_loop`: the event loop a run uses (uvloop where installed), in a thread of its own under a running loop.
- `progress`: the progress bar.

Imports `model_kinds/`, `pool/`, `backends/`, `results/`, `datasets/`, `benchmarks/`, `config/` and the leaves;
`api`, `training/` and `cli/` import it, and nothing here imports them.
"""
