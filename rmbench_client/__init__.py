"""rmbench-client: reward-model benchmarks (the registry, `benchmarks.py`, lists them) for reward models, DPO policies
and LLM judges behind inference servers."""

import os
import sys

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
