"""One BLAS thread while the client does its own numpy work (a run's scoring and bootstraps, `score`).

numpy's OpenBLAS keeps a worker thread per core, and the workers spin after every call; the client's matrix work
is small, so they only burn CPU (bench/README: about 0.12 s in one RM-Bench style-bias bootstrap on 2 cores). The
limit (threadpoolctl) holds while a block runs and is put back after it: importing the client changes no
environment variable, and the servers it starts get the user's environment. It is left alone where the user chose
a number (`OPENBLAS_NUM_THREADS`) and outside the main thread (the API's `*_async` forms): a process's BLAS setting
is its main program's, and OpenBLAS ignores a raise from another thread once the main thread has set one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


@contextmanager
def few_blas_threads() -> Iterator[None]:
    """BLAS on one thread inside the block (in the main thread, unless the user chose a number); as it was after."""
    if BLAS_THREADS_ENV in os.environ or threading.current_thread() is not threading.main_thread():
        yield
        return
    import numpy  # noqa: F401 - threadpoolctl limits the libraries already loaded
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
