"""The Python API over finished runs: read back with no server (`rescore`, `compare`), or run again (`reproduce`).

- `saved_runs`: `rescore` re-scores saved per-sample files as `rmbench-client score` does; `compare` sets finished
  runs side by side as `rmbench-client compare` does.
- `reproduction`: `reproduce` runs a finished run again as its stamp records it and says whether the two agree.

Imports `api` (reproduce runs through `evaluate`), `results/`, `benchmarks/`, `datasets/`, `config/`, `backends/` and
the leaves; the package root (`rmbench_client.rescore`, ...) and `cli/` import it, and nothing else does.
"""
