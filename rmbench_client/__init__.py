"""rmbench-client: reward-model benchmarks (the registry, `benchmarks.py`, lists them) for reward models, DPO
policies, process reward models and LLM judges behind inference servers.

The Python API (docs/python-api.md): `evaluate` runs one benchmark through a config's servers, `evaluate_suite`
every benchmark whose data is present, `rescore` re-scores saved files, `compare` sets runs side by side (each with
an `*_async` form where it runs servers); `serve` starts and stops a config's servers around a block; `watch`
evaluates every checkpoint of a training run as it is written; `MLflowTracker` and `WandbTracker` log results.
Results are typed (`BenchmarkResult`, `SuiteResult`, `Scores`, `Comparison`); errors are `RmbError`'s subclasses.
"""

import os
import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# httpx imports its own command line (click, pygments, rich: about 30 ms) on import whenever click is installed;
# nothing here runs it. A None entry makes that one import fail at once, and httpx then stubs its `main`.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

# numpy's OpenBLAS starts a worker thread per core, and they spin after every call. The client's matrix work is
# small, so those threads only burn CPU: on 2 cores about 0.09 s at numpy's import and 0.12 s in one RM-Bench
# style-bias bootstrap (bench/README). One thread unless the user chose a number; the processes the client starts
# get `user_environment()`.
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"
BLAS_THREADS_SET_HERE = BLAS_THREADS_ENV not in os.environ
if BLAS_THREADS_SET_HERE:
    os.environ[BLAS_THREADS_ENV] = "1"


def user_environment() -> dict[str, str]:
    """The environment without the client's own settings: what the servers and engines it starts inherit."""
    env = dict(os.environ)
    if BLAS_THREADS_SET_HERE:
        env.pop(BLAS_THREADS_ENV, None)
    return env


# The public API, imported on first use (PEP 562): `import rmbench_client` stays as light as the command line needs.
_EXPORTS = {
    "evaluate": "api",
    "evaluate_async": "api",
    "evaluate_suite": "api",
    "evaluate_suite_async": "api",
    "rescore": "api",
    "compare": "api",
    "load_config": "api",
    "with_checkpoint": "api",
    "ConfigSource": "api",
    "serve": "serving",
    "Servers": "serving",
    "watch": "watcher",
    "WatchRow": "watcher",
    "load_result": "results",
    "BenchmarkResult": "results",
    "SuiteResult": "results",
    "Scores": "results",
    "Group": "results",
    "Estimate": "results",
    "Comparison": "results",
    "Tracker": "trackers",
    "MLflowTracker": "trackers",
    "WandbTracker": "trackers",
    "RunConfig": "config",
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
    "load_config",
    "with_checkpoint",
    "ConfigSource",
    "serve",
    "Servers",
    "watch",
    "WatchRow",
    "load_result",
    "BenchmarkResult",
    "SuiteResult",
    "Scores",
    "Group",
    "Estimate",
    "Comparison",
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
    from .api import (
        ConfigSource,
        compare,
        evaluate,
        evaluate_async,
        evaluate_suite,
        evaluate_suite_async,
        load_config,
        rescore,
        with_checkpoint,
    )
    from .config import RunConfig
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
    from .results import BenchmarkResult, Comparison, Estimate, Group, Scores, SuiteResult, load_result
    from .serving import Servers, serve
    from .trackers import MLflowTracker, Tracker, WandbTracker
    from .watcher import WatchRow, watch


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rmbench_client' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"rmbench_client.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
