"""rmbench-client: reward-model benchmarks (the registry, `benchmarks.py`, lists them) for reward models, DPO
policies, process reward models and LLM judges behind inference servers.

The Python API (docs/python-api.md): `evaluate` runs one benchmark through a config's servers, `evaluate_suite`
every benchmark whose data is present, `rescore` re-scores saved files, `compare` sets runs side by side (each with
an `*_async` form where it runs servers), `reproduce` runs a finished run again and says whether the two agree;
`serve` starts and stops a config's servers around a block; `watch` evaluates every checkpoint of a training run
as it is written; `MLflowTracker` and `WandbTracker` log results. Results are typed (`BenchmarkResult`,
`SuiteResult`, `Scores`, `Comparison`, `Reproduction`), each with its `Stamp` (what made it); errors are
`RmbError`'s subclasses.
"""

from typing import TYPE_CHECKING, Any

# The public API, imported on first use (PEP 562): `import rmbench_client` stays as light as the command line needs,
# and changes nothing in the process (no environment variable, no other module). `__version__` too: in a checkout it
# may ask git (version.py).
_EXPORTS = {
    "evaluate": "api",
    "evaluate_async": "api",
    "evaluate_suite": "api",
    "evaluate_suite_async": "api",
    "rescore": "analysis.saved_runs",
    "compare": "analysis.saved_runs",
    "reproduce": "analysis.reproduction",
    "Reproduction": "analysis.reproduction",
    "ModelCheck": "analysis.reproduction",
    "Agreement": "results.agreement",
    "load_config": "api",
    "with_checkpoint": "api",
    "ConfigSource": "api",
    "serve": "training.serving",
    "Servers": "training.serving",
    "watch": "training.watcher",
    "WatchRow": "training.watcher",
    "WatchCell": "training.watcher",
    "load_result": "results.typed",
    "BenchmarkResult": "results.typed",
    "SuiteResult": "results.typed",
    "Scores": "results.typed",
    "Group": "results.typed",
    "Estimate": "results.typed",
    "Comparison": "results.typed",
    "Difference": "results.comparison",
    "RunInterrupted": "results.typed",
    "Status": "results.typed",
    "Stamp": "results.stamp",
    "Tracker": "report.trackers",
    "MLflowTracker": "report.trackers",
    "WandbTracker": "report.trackers",
    "RunConfig": "config.schema",
    "RmbError": "errors",
    "UserError": "errors",
    "DataError": "errors",
    "ConfigError": "errors",
    "RunLockedError": "errors",
    "ServerError": "errors",
    "TrackerError": "errors",
    "EndpointError": "errors",
}
__all__ = [
    "__version__",
    "evaluate",
    "evaluate_async",
    "evaluate_suite",
    "evaluate_suite_async",
    "rescore",
    "compare",
    "reproduce",
    "Reproduction",
    "ModelCheck",
    "Agreement",
    "load_config",
    "with_checkpoint",
    "ConfigSource",
    "serve",
    "Servers",
    "watch",
    "WatchRow",
    "WatchCell",
    "load_result",
    "BenchmarkResult",
    "SuiteResult",
    "Scores",
    "Group",
    "Estimate",
    "Comparison",
    "Difference",
    "RunInterrupted",
    "Status",
    "Stamp",
    "Tracker",
    "MLflowTracker",
    "WandbTracker",
    "RunConfig",
    "RmbError",
    "UserError",
    "DataError",
    "ConfigError",
    "RunLockedError",
    "ServerError",
    "TrackerError",
    "EndpointError",
]

if TYPE_CHECKING:  # the same names, as type checkers and readers see them
    __version__: str
    from .analysis.reproduction import ModelCheck, Reproduction, reproduce
    from .analysis.saved_runs import compare, rescore
    from .api import (
        ConfigSource,
        evaluate,
        evaluate_async,
        evaluate_suite,
        evaluate_suite_async,
        load_config,
        with_checkpoint,
    )
    from .config.schema import RunConfig
    from .errors import (
        ConfigError,
        DataError,
        EndpointError,
        RmbError,
        RunLockedError,
        ServerError,
        TrackerError,
        UserError,
    )
    from .report.trackers import MLflowTracker, Tracker, WandbTracker
    from .results.agreement import Agreement
    from .results.comparison import Difference
    from .results.stamp import Stamp
    from .results.typed import (
        BenchmarkResult,
        Comparison,
        Estimate,
        Group,
        RunInterrupted,
        Scores,
        Status,
        SuiteResult,
        load_result,
    )
    from .training.serving import Servers, serve
    from .training.watcher import WatchCell, WatchRow, watch


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .version import client_version

        return client_version()
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rmbench_client' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"rmbench_client.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS, "__version__"])
