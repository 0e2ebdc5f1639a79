"""The API's own arguments checked where they come in: a wrong type is the caller's mistake, named by its argument
(`fresh= must be True or False, not 'no'`), not an error from deep inside a run, nor a value taken for another
(`fresh="no"` is truthy: it would wipe the stored scores)."""

from __future__ import annotations

import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .report.trackers import Tracker


def flags(**values: Any) -> None:
    """Each of `values` (by its argument's name) must be True or False."""
    for name, value in values.items():
        if not isinstance(value, bool):
            raise TypeError(f"{name}= must be True or False, not {value!r}")


def step(value: Any) -> int | None:
    """A tracker step: None or an integer (numpy's included: a trainer's counter), never a bool."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"step= must be an integer or None, not {value!r}")
    return int(value)


def paths(**values: Any) -> None:
    """Each of `values` (by its argument's name) must be a path (a str or a Path) or None: `data=5` is the
    caller's mistake, not a config error about a key the caller never wrote."""
    for name, value in values.items():
        if value is not None and not isinstance(value, str | os.PathLike):
            raise TypeError(f"{name}= must be a path (a str or a Path) or None, not {value!r}")


def name(**values: Any) -> None:
    """Each of `values` (by its argument's name) must be a name (a str) or None."""
    for key, value in values.items():
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{key}= must be a name (a str) or None, not {value!r}")


def limit(value: Any) -> int | None:
    """How many prompts to score: None (all) or an integer of 1 or more (numpy's too), never a bool, a float or
    a string (`limit="40"` is the caller's mistake, not 40)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"limit= must be an integer of 1 or more, or None, not {value!r}")
    if value < 1:
        raise ConfigError(f"limit={value}: score at least 1 prompt (None scores them all)")
    return int(value)


def threshold(value: Any) -> float | None:
    """A process benchmark's step threshold: None (the config's) or a real number from 0 to 1, as `score
    --threshold` and `prm.threshold` take it (a string is not read as one; numpy's error would say neither)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"threshold= must be a number from 0 to 1, or None, not {value!r}")
    number = float(value)
    if not 0.0 <= number <= 1.0:  # NaN too
        raise ConfigError(f"threshold={value!r}: a step threshold is a number from 0 to 1")
    return number


def tolerance(value: Any) -> float:
    """How far two numbers may lie apart and agree (`reproduce`): a real number of 0 or more."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"tolerance= must be a number of 0 or more, not {value!r}")
    if not 0.0 <= float(value) < float("inf"):  # NaN too
        raise ConfigError(f"tolerance={value!r}: a tolerance is a number of 0 or more")
    return float(value)


def seconds(**values: Any) -> None:
    """Each of `values` (by its argument's name) must be a number of seconds (its range is the caller's check)."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}= must be a number of seconds, not {value!r}")


def not_one_name(argument: str, value: Any) -> None:
    """An argument that takes a sequence of names refuses one name alone, which would be read as its letters."""
    if isinstance(value, str):
        raise TypeError(f"{argument} takes a sequence of names, not one: {argument}=[{value!r}]")


def benchmark_names(value: Any) -> list[str] | None:
    """The benchmarks named (None: every one), each by its registry name; one name alone is refused, not read
    as a sequence of letters; an unknown name is the registry's ConfigError."""
    from .benchmarks import registry

    if value is None:
        return None
    not_one_name("benchmarks", value)
    names = [registry.get(n).name for n in value]
    if not names:  # not "every one" (the suite's default), which would then refuse one never named
        raise ConfigError("benchmarks=[] names no benchmark: name one or more, or give None for every one with data")
    return names


def _is_tracker(value: Any) -> bool:
    return callable(getattr(value, "log", None)) and callable(getattr(value, "close", None))


def trackers(value: Any) -> tuple[Tracker, ...]:
    """The trackers: a sequence of them, or one (taken as a sequence of one)."""
    if _is_tracker(value):
        return (value,)
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"trackers= takes a list of trackers (or one tracker), not {value!r}")
    wrong = [t for t in value if not _is_tracker(t)]
    if wrong:
        raise TypeError(f"trackers= holds {wrong[0]!r}, which is no tracker (it needs log() and close() methods)")
    return tuple(value)


def seed(value: Any) -> None:
    """A seed numpy's generators refuse (-1) is the caller's mistake, said before any file is read."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"seed={value!r}: a seed is an integer, 0 or more")


@dataclass(frozen=True)
class Options:
    """What an API call does besides its config and benchmarks, checked: each run's `fresh`, `progress` and
    `heatmaps`, the trackers and their step, and whether the run takes SIGINT and SIGTERM."""

    fresh: bool
    progress: bool
    heatmaps: bool
    trackers: Sequence[Tracker]
    step: int | None
    handle_signals: bool


def options(
    fresh: Any, progress: Any, heatmaps: Any, handle_signals: Any, trackers_: Any, step_: Any, limit_: Any
) -> tuple[Options, int | None]:
    """A call's arguments checked (each a TypeError naming it), and its `limit`."""
    flags(fresh=fresh, progress=progress, heatmaps=heatmaps, handle_signals=handle_signals)
    given, at, most = trackers(trackers_), step(step_), limit(limit_)
    return Options(fresh, progress, heatmaps, given, at, handle_signals), most
