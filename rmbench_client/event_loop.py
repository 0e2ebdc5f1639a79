"""The event loop a run's requests go through: uvloop where it is installed (a dependency of the client wherever
it builds: Linux and macOS, CPython), else asyncio's own. uvloop's loop costs less CPU per request, which is what
one client feeding many endpoints runs out of (bench P8). `RMBENCH_EVENT_LOOP=asyncio` picks asyncio's loop."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from . import constants as C

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop maker, or None (asyncio's default) where uvloop is missing or not wanted."""
    if os.environ.get(C.EVENT_LOOP_ENV, "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the loop `loop_factory` picks."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


def name() -> str:
    """Which loop `run` uses ("uvloop" or "asyncio"), for the bench and the docs."""
    return "asyncio" if loop_factory() is None else "uvloop"
