"""The timing loop shared by the in-process baselines: one warm-up, then `repeats` timed passes."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Sequence
from typing import Any


def timed(
    run: Callable[[Any], list[Any]],
    warmup: Sequence[Any],
    full: Sequence[Any],
    repeats: int,
    before: Callable[[], None] | None = None,
):
    """(warm-up seconds, wall seconds per pass, process CPU seconds per pass, the last pass's values, minor page
    faults over the timed passes); `before` runs between the warm-up and the timed passes (a start signal shared
    with another process)."""
    t0 = time.perf_counter()
    run(warmup)
    warmup_s = time.perf_counter() - t0
    if before is not None:
        before()
    times: list[float] = []
    cpu: list[float] = []
    values: list[Any] = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        values = run(full)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return warmup_s, times, cpu, values, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
