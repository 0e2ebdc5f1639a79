"""The client inside a training loop: servers around a block, and every checkpoint evaluated as it is written.

- `serving`: `serve`, the servers of a config as a context manager (each role to its launcher, local or Ray).
- `watcher`: `watch`, every checkpoint of a training run served and evaluated, with its table and chart.
- `checkpoints`: when a checkpoint is complete, and its step.

Imports `api`, `arguments`, `run/`, `results/`, `report/`, `launcher/`, `cluster/`, `config/`, `benchmarks/` and
the leaves; only the package's `__init__` (lazily) and `cli/` import it.
"""
