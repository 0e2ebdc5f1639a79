"""The event loop a run's requests go through: uvloop where it is installed (a dependency of the client wherever
it builds: Linux and macOS, CPython), else asyncio's own. uvloop's loop costs less CPU per request, which is what
one client feeding many endpoints runs out of (bench P8). `RMBENCH_EVENT_LOOP=asyncio` picks asyncio's loop,
`uvloop` insists on uvloop; any other value is a ConfigError.

A run always has a loop of its own. Called where a loop is already running (a notebook, an async trainer calling
the sync API), the whole run goes to a thread of its own, with its private loop, while the caller's thread waits
(`off_loop`): Ctrl-C stops the run there, whether Python's default handler raises it in the waiting thread (a
notebook) or `asyncio.run`'s handler cancels the waiting task instead (seen by polling it), and the waiting thread
holds the run's SIGTERM handling, which belongs to the main thread. The async API awaits a
run on its own thread without blocking the caller's loop (`in_thread`), and a cancellation of that await stops the
run and waits for its end, so that its outputs are written and its lock released before the caller goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from .. import constants as C
from ..errors import ConfigError

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop maker, or None (asyncio's default) where uvloop is missing or not wanted; a ConfigError for a
    value of RMBENCH_EVENT_LOOP other than asyncio or uvloop (a misspelt one would silently be uvloop), or uvloop
    asked for where it is not installed."""
    wanted = os.environ.get(C.EVENT_LOOP_ENV, "").strip().lower()
    if wanted not in ("", "asyncio", "uvloop"):
        raise ConfigError(f"{C.EVENT_LOOP_ENV}={os.environ[C.EVENT_LOOP_ENV]!r}: not an event loop (asyncio or "
                          "uvloop; unset: uvloop where installed, else asyncio)")  # fmt: skip
    if wanted == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if wanted == "uvloop":
            raise ConfigError(f"{C.EVENT_LOOP_ENV}=uvloop: uvloop is not installed") from None
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the loop `loop_factory` picks."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


def _cancels(task: asyncio.Task[Any] | None) -> int:
    """How many times `task` was asked to cancel so far; 0 where it cannot say (no task, or a task class of another
    loop without `cancelling`)."""
    cancelling = getattr(task, "cancelling", None)
    return cancelling() if callable(cancelling) else 0


def off_loop(
    call: Callable[[], T],
    stop: Callable[[BaseException], None],
    ended: Callable[[BaseException, T], BaseException] = lambda exc, _: exc,
    hold: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
) -> T:
    """`call()` (a whole run, which starts a loop of its own), here; where a loop is already running in this thread,
    on a thread of its own while this one waits, inside `hold()` (the run's signal handling, which only this
    thread can have when it is the main one: `RunSignals.held`). An exception that reaches the waiting thread
    meanwhile (a KeyboardInterrupt from the caller's handler) is given to `stop`, which ends the run; so is a cancel
    of the task that waits (asyncio.run's SIGINT handler only cancels it, and the loop this call blocks cannot
    deliver that), as a KeyboardInterrupt. Once the run has ended (its outputs written) and `hold` has been left,
    `ended(exception, what the call returned)` is raised, or the exception itself when the call raised; a cancel
    stays pending on the task, for asyncio to deliver as it does."""
    try:
        task = asyncio.current_task(asyncio.get_running_loop())
    except RuntimeError:  # no loop running here
        return call()
    asked = _cancels(task)  # a cancel swallowed before this call is not this call's
    poll = C.CALLER_CANCEL_POLL_S if task is not None else None
    done: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            done["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            done["error"] = exc
        finally:
            finished.set()

    interrupted: BaseException | None = None
    stopped = False
    with hold():
        threading.Thread(target=target, name="rmbench-run").start()
        while True:
            # every call inside the try: a second Ctrl-C may land in any of them, `stop` included (it can be called
            # again). Not Thread.join: on CPython 3.11 a join interrupted by KeyboardInterrupt leaves the thread
            # marked stopped, and the next join returns at once while the run still runs; an Event's wait can be
            # resumed
            try:
                if interrupted is None and _cancels(task) > asked:
                    interrupted = KeyboardInterrupt("the waiting task was cancelled")
                if interrupted is not None and not stopped:
                    stop(interrupted)
                    stopped = True
                if finished.wait(poll):
                    break
            except BaseException as exc:  # Ctrl-C, maybe again: the run is stopped, and waited for to its end
                if interrupted is None:
                    interrupted = exc
    if interrupted is not None:
        if "error" in done:
            raise interrupted from done["error"]
        raise ended(interrupted, done["value"])
    if "error" in done:
        raise done["error"]
    return done["value"]  # type: ignore[no-any-return]


async def in_thread(call: Callable[[], T], stop: Callable[[], None]) -> T:
    """`call()` on a thread of its own, awaited without blocking this loop. Cancelled, `stop()` is called and the
    thread awaited to its end (a cancellation meanwhile changes nothing) before the CancelledError goes on."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if finished.done():
            return
        if isinstance(error, asyncio.CancelledError):  # a future takes no CancelledError as its exception
            finished.cancel()
        elif error is not None:
            finished.set_exception(error)
        else:
            finished.set_result(value)  # type: ignore[arg-type]

    def target() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = call()
        except BaseException as exc:  # the awaiting task raises it
            error = exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the caller's loop has closed: nobody waits any more
            pass

    # not a daemon: should the caller's loop go without waiting, the run still ends as runs end, outputs written
    threading.Thread(target=target, name="rmbench-run").start()
    try:
        return await asyncio.shield(finished)
    except asyncio.CancelledError:
        if finished.done() and not finished.cancelled():
            raise
        stop()
        while not finished.done():
            try:
                await asyncio.shield(finished)
            except asyncio.CancelledError:
                continue  # cancelled again: the run is already stopping
            except BaseException:  # what the stopped run raised: the cancellation is the answer
                break
        if finished.done() and not finished.cancelled():
            finished.exception()  # retrieved: no "never retrieved" warning
        raise


def name() -> str:
    """Which loop `run` uses ("uvloop" or "asyncio"), for the bench and the docs."""
    return "asyncio" if loop_factory() is None else "uvloop"
