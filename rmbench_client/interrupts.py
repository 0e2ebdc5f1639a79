"""SIGINT and SIGTERM during a run: every phase ends within seconds, and the run directory is left with either the
earlier result, untouched, or the new one with its reason, never neither.

One handler serves the whole run. Before the run directory is touched, a signal raises `Interrupted` (while the
data loads) or cancels the run's task (`cancels`: while the servers are checked, so that a request that hangs ends
at once); the runner then leaves the directory as it was. Once the run has touched the directory (`touch`), a
signal cancels the scoring and the outputs are written from what is scored before the run ends. A repeated signal
before the directory was touched leaves at once; after that it is ignored (the outputs take seconds to write, and
`kill -9` stays the way out: the store keeps every score).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

EXIT_INTERRUPTED = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Interrupted(KeyboardInterrupt):
    """A run ended by a signal before it touched its run directory."""

    def __init__(self, sig: signal.Signals) -> None:
        super().__init__(f"interrupted by {sig.name}")
        self.signal = sig


class RunSignals:
    """`with RunSignals() as signals:` handles SIGINT and SIGTERM for one run (in the main thread)."""

    def __init__(self) -> None:
        self.signal: signal.Signals | None = None
        self.touched = False  # the run directory was changed: a signal must let the outputs be written
        self._task: asyncio.Task[Any] | None = None
        self._previous: dict[signal.Signals, Any] = {}

    def __enter__(self) -> RunSignals:
        # signals are the main thread's: a run in a worker thread (the API's async forms) leaves them to the caller
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._on_signal) for sig in EXIT_INTERRUPTED}
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    @property
    def reason(self) -> str | None:
        return f"interrupted by {self.signal.name}" if self.signal is not None else None

    def cancels(self, task: asyncio.Task[Any] | None) -> None:
        """A signal cancels `task` (the run's coroutine) from now on; None before its event loop closes."""
        self._task = task
        if task is not None and self.signal is not None:  # it came while the loop was starting
            task.cancel()

    def touch(self) -> None:
        """Called just before the run directory is changed: CancelledError if a signal came first (the task's
        cancel may still be on its way), so that the directory stays as it was."""
        if self.signal is not None:
            raise asyncio.CancelledError
        self.touched = True

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        if self.signal is not None:  # repeated
            if not self.touched:
                sys.stderr.write(f"{self.reason} again: leaving at once; the run directory was not changed\n")
                sys.stderr.flush()
                os._exit(EXIT_INTERRUPTED[self.signal])
            return
        self.signal = sig
        task = self._task
        if task is not None and not task.get_loop().is_closed():
            # the handler runs between two bytecodes of whatever the loop was doing: the cancel is queued
            task.get_loop().call_soon_threadsafe(task.cancel)
        elif not self.touched:
            raise Interrupted(sig)
