"""What a run leaves behind and how it is read back: summaries, score files, comparisons, suites, the directory.

- `summary`: the run's facts and completeness (`RunInfo`) and a summary read back once, typed (`RunSummary`).
- `typed`: the Python API's typed results (`BenchmarkResult`, `SuiteResult`, `Scores`, `load_result`, ...).
- `comparison`: runs compared: read, paired over the same texts, and their typed differences.
- `score_files`: every file `score` accepts, read through the benchmark registry.
- `suite`: one run per benchmark whose data is present, and the table of their headlines.
- `run_directory`: a run directory's lock and the outputs replaced together.
- `data_hashes`: content hashes of the data a run scored.

Imports `benchmarks/`, `datasets/`, `config/` and the leaves (`constants`, `errors`, `examples`, `atomic_write`,
`json_text`); `report/`, `run/`, `analysis/`, `api`, `training/` and `cli/` import it, and nothing here imports them.
"""
