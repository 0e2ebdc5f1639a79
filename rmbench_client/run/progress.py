"""The progress bar of a run: prompts done, rate and time left; nothing at all when disabled."""

from __future__ import annotations

import time
from typing import Any

REFRESH_S = 0.25  # the bar's numbers change at most this often: rich's speed estimate costs per update


class ProgressBar:
    def __init__(self, total: int, enabled: bool) -> None:
        self._bar: Any = None
        self._done = 0
        self._shown = 0.0
        if not enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            transient=False,
        )
        self._task = self._bar.add_task("scoring", total=total, rate="")

    def __enter__(self) -> ProgressBar:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._flush()
            self._bar.stop()

    def advance(self, prompts: int = 1) -> None:
        if self._bar is None:
            return
        self._done += prompts
        now = time.monotonic()
        if now - self._shown >= REFRESH_S:
            self._shown = now
            self._flush()

    def _flush(self) -> None:
        self._bar.advance(self._task, self._done)
        self._done = 0
        speed = self._bar.tasks[0].speed
        self._bar.update(self._task, rate=f"{speed:.1f} prompts/s" if speed else "")
