"""What ends a run from outside: SIGINT and SIGTERM, or the caller's cancellation (an async call cancelled). Every
phase ends within seconds, and the run directory is left with either the earlier result, untouched, or the new one
with its reason, never neither.

One `RunSignals` serves the whole run. Before the run directory is touched, a signal raises `Interrupted` (while
the data loads) or cancels the run's task (`cancels`: while the servers are checked, so that a request that hangs
ends at once); the runner then leaves the directory as it was. Once the run has touched the directory (`touch`), a
signal cancels the scoring and the outputs are written from what is scored before the run ends. A repeated signal
before the directory was touched leaves at once (where the caller had a handler of its own, that handler is
called at once instead: a training script's, which may not want its process ended); after that it is ignored (the
outputs take seconds to write, and `kill -9` stays the way out: the store keeps every score). `stop` does what a
signal does, from any thread: how an async caller's cancellation reaches a run on its own thread.

The handlers are the run's only while it runs, and only where the caller lets it have them (`handle`): the caller's
are put back when it ends, and `hand_on` then gives the signal to the handler that was there before (a training
script's SIGTERM handler under Slurm, Python's KeyboardInterrupt, the system's default), once the outputs are
written. Handlers belong to the main thread: a run on a thread of its own while the main thread waits for it (a
sync call inside a running event loop) has the waiting thread hold SIGTERM for it (`held`), and the signal is
handed on there, once the run's thread has ended; SIGINT already reaches such a run through the waiting call.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

EXIT_INTERRUPTED = {signal.SIGINT: 130, signal.SIGTERM: 143}
CANCELLED = "cancelled by the caller"


class Interrupted(KeyboardInterrupt):
    """A run ended by a signal before it touched its run directory."""

    def __init__(self, sig: signal.Signals) -> None:
        super().__init__(f"interrupted by {sig.name}")
        self.signal = sig


class RunSignals:
    """`with RunSignals() as signals:` handles SIGINT and SIGTERM for one run (in the main thread, and only with
    `handle`; a signal the caller ignores stays ignored). Runs after one another may share it (a suite): once
    stopped, it stops each."""

    def __init__(self, handle: bool = True) -> None:
        self.handle = handle
        self.signal: signal.Signals | None = None
        self.cancelled: str | None = None  # why `stop` was called
        self.touched = False  # the run directory was changed: a signal must let the outputs be written
        self._task: asyncio.Task[Any] | None = None
        self._cancel_sent = False  # `stop` cancelled the task (once: a second cancel could cut the outputs' writing)
        self._previous: dict[signal.Signals, Any] = {}
        self._lock = threading.Lock()  # `stop` comes from another thread
        self._holding = False  # a thread waiting for the run (not the run's own) has the handlers: `held`
        self._handed: tuple[signal.Signals, KeyboardInterrupt] | None = None  # left to that thread to hand on

    def __enter__(self) -> RunSignals:
        self.touched = False  # one object may serve several runs in turn (a suite): a stop reaches each
        if not self._holding:
            self._take(tuple(EXIT_INTERRUPTED))
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._holding:
            self._give_back()

    def _take(self, signals: tuple[signal.Signals, ...]) -> None:
        # signals are the main thread's: a run in a worker thread (the API's async forms) leaves them to the caller
        if self.handle and threading.current_thread() is threading.main_thread():
            for sig in signals:
                if signal.getsignal(sig) != signal.SIG_IGN:
                    self._previous[sig] = signal.signal(sig, self._on_signal)

    def _give_back(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """`with signals.held():` in the thread that waits while the run goes on in another (`event_loop.off_loop`):
        where that is the main thread, it takes SIGTERM for the run as `with signals:` would (SIGINT stays the
        caller's: it reaches the run through the waiting call), and once the block ends (the run's thread has
        ended, its outputs written) puts the caller's handler back and hands on what the run caught: what
        `hand_on` was given in the run's thread, or else a signal caught that no run handed on (it came once the
        run had ended, while it logged to its trackers, say, or the run raised), raised again for that handler.
        Nothing is taken elsewhere, or with `handle` False."""
        self._take((signal.SIGTERM,))
        self._holding = bool(self._previous)
        try:
            yield
        finally:
            self._give_back()
            self._holding = False
        handed, self._handed = self._handed, None
        if handed is not None:
            hand_on(*handed)
        elif self.signal is not None:  # caught, but no run handed it on: the caller's handler gets it now
            signal.raise_signal(self.signal)

    @contextlib.contextmanager
    def between(self) -> Iterator[None]:
        """`with signals.between():` after a run of a suite, while its result is logged to the trackers, before the
        next run: in the main thread (with `handle`) SIGINT and SIGTERM are taken and only noted, so that the suite
        starts no further run (`stopped`) and hands the signal on once it has written its table. Left to the
        holding thread where one holds them (`held`)."""
        self.touched = True  # the run before has ended, its outputs written: a signal now is noted, never raised
        if self._holding:
            yield
            return
        self._take(tuple(EXIT_INTERRUPTED))
        try:
            yield
        finally:
            self._give_back()

    def hand_on(self, sig: signal.Signals, interrupted: KeyboardInterrupt) -> None:
        """`hand_on(sig, interrupted)` once the run's handlers are gone; where a waiting thread holds them
        (`held`), left to it."""
        if self._holding:
            self._handed = (sig, interrupted)
        else:
            hand_on(sig, interrupted)

    @property
    def stopped(self) -> bool:
        """A signal came, or `stop` was called."""
        return self.signal is not None or self.cancelled is not None

    def not_begun(self) -> BaseException:
        """What ends a run stopped before it touched its run directory: `Interrupted` for a signal, else the
        CancelledError of a stop (the caller's)."""
        return Interrupted(self.signal) if self.signal is not None else asyncio.CancelledError(self.reason)

    @property
    def reason(self) -> str | None:
        if self.signal is not None:
            return f"interrupted by {self.signal.name}"
        return self.cancelled

    def cancels(self, task: asyncio.Task[Any] | None) -> None:
        """A signal cancels `task` (the run's coroutine) from now on; None before its event loop closes."""
        with self._lock:
            self._task = task
        if task is not None and self.stopped:  # it came while the loop was starting
            self._cancel_sent = True
            task.cancel()

    def touch(self) -> None:
        """Called just before the run directory is changed: CancelledError if a signal came first (the task's
        cancel may still be on its way), so that the directory stays as it was."""
        if self.stopped:
            raise asyncio.CancelledError
        self.touched = True

    def stop(self, reason: str = CANCELLED) -> None:
        """End the run as a signal would, from any thread: its task is cancelled (at once, or as soon as it
        starts), and the outputs say `reason`. Called again after a call that was cut short (a second Ctrl-C
        raised inside it), it finishes what that one began; the task is cancelled once."""
        if self.signal is not None or self._cancel_sent:
            return
        if self.cancelled is None:
            self.cancelled = reason
        self._cancel_sent = self._cancel_task()

    def _cancel_task(self) -> bool:
        with self._lock:
            task = self._task
        if task is None:
            return False
        with contextlib.suppress(RuntimeError):  # its loop closed meanwhile: the run has ended anyway
            # from a signal handler or another thread: the cancel is queued on the task's own loop
            task.get_loop().call_soon_threadsafe(task.cancel)
        return True

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        if self.stopped:  # repeated
            if not self.touched:
                own = self._previous.get(sig)
                if callable(own) and own is not signal.default_int_handler:  # the caller's own: it decides, now
                    own(signum, frame)
                    return
                sys.stderr.write(f"{self.reason} again: leaving at once; the run directory was not changed\n")
                sys.stderr.flush()
                os._exit(EXIT_INTERRUPTED.get(self.signal or sig, 130))
            return
        self.signal = sig
        # not yet scoring: the run is left by raising, where it is in this thread; held for it, it sees the stop
        if not self._cancel_task() and not self.touched and not self._holding:
            raise Interrupted(sig)


def hand_on(sig: signal.Signals, interrupted: KeyboardInterrupt) -> None:
    """Once a run that caught `sig` has written its outputs (and its handlers are gone): what the handler installed
    before the run does with it. Python's default SIGINT handler (or none from Python): `interrupted` is raised, a
    KeyboardInterrupt carrying the result; the system's default: the signal is raised again (SIGTERM ends the
    process, as it would have without the run); ignored: nothing; the caller's own function: it is called, and
    returns or raises as it does."""
    handler = signal.getsignal(sig)
    if handler is None or handler is signal.default_int_handler:
        raise interrupted
    if handler == signal.SIG_IGN:
        return
    if handler == signal.SIG_DFL:
        signal.raise_signal(sig)
        raise interrupted  # a default action that did not end the process (a blocked signal)
    if callable(handler):
        handler(sig, inspect.currentframe())


@contextlib.contextmanager
def held_for_later(handle: bool = True) -> Iterator[list[signal.Signals]]:
    """`with held_for_later() as noted:` around a run whose caller has more to write once it ends (`watch`: the
    checkpoint's row, its server stopped): the caller's SIGTERM handler (and SIGINT's, where no event loop runs in
    this thread: asyncio's own stays, as it reaches the run through the waiting call) stands behind a note, so
    that the run hands its signal on to the note (which returns: the run returns its result), and the caller
    hands it on with `hand_on` once it has written what it writes. A second signal goes to the caller's handler at
    once (the system's default ends the process). Nothing is taken in another thread, with `handle` False, or for
    a signal the caller ignores."""
    noted: list[signal.Signals] = []
    previous: dict[signal.Signals, Any] = {}

    def note(signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        if not noted:
            noted.append(sig)
            return
        own = previous[sig]
        if own is None or own is signal.default_int_handler:
            raise KeyboardInterrupt
        if own == signal.SIG_DFL:
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)
        elif callable(own):
            own(signum, frame)

    if handle and threading.current_thread() is threading.main_thread():
        try:
            asyncio.get_running_loop()
            taken: tuple[signal.Signals, ...] = (signal.SIGTERM,)
        except RuntimeError:
            taken = tuple(EXIT_INTERRUPTED)
        for sig in taken:
            if signal.getsignal(sig) != signal.SIG_IGN:
                previous[sig] = signal.signal(sig, note)
    try:
        yield noted
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
