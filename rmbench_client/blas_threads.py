"""One BLAS thread while the client does its own numpy work (a run's scoring and bootstraps, `score`).

numpy's OpenBLAS keeps a worker thread per core, and the workers spin after every call; the client's matrix work
is small, so they only burn CPU (bench/README: about 0.12 s in one RM-Bench style-bias bootstrap on 2 cores). The
limit (threadpoolctl) holds while a block runs and is put back after it: neither importing the client nor a run
changes an environment variable (threadpoolctl's import sets one: it is taken back out), and the servers it starts
get the user's environment. It is left alone where the user chose
a number (`OPENBLAS_NUM_THREADS`) and outside the main thread (the API's `*_async` forms): a process's BLAS setting
is its main program's, and OpenBLAS ignores a raise from another thread once the main thread has set one.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


@contextmanager
def few_blas_threads() -> Iterator[None]:
    """BLAS on one thread inside the block (in the main thread, unless the user chose a number); as it was after."""
    if BLAS_THREADS_ENV in os.environ or threading.current_thread() is not threading.main_thread():
        yield
        return
    import numpy  # noqa: F401 - threadpoolctl limits the libraries already loaded

    with _threadpoolctl().threadpool_limits(limits=1, user_api="blas"):
        yield


def _threadpoolctl() -> Any:
    """threadpoolctl, imported without the environment variable its import sets: it adds KMP_DUPLICATE_LIB_OK=True,
    which would hide Intel OpenMP's duplicate-library error in the caller's process and every server started after.
    Only what the import added is taken out (the caller's own setting, or an earlier import's, stays)."""
    if "threadpoolctl" in sys.modules:
        return sys.modules["threadpoolctl"]
    before = dict(os.environ)
    import threadpoolctl

    for key in [k for k in os.environ if k not in before]:
        del os.environ[key]
    return threadpoolctl
