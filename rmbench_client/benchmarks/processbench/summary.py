"""ProcessBench's summary as `score` returns it and `summary.json` begins: its fields in the order they are written.
An F1 or accuracy is None where it is undefined (a split with only correct or only erroneous solutions), and so is
an interval's every bound where the number is undefined in every replicate; `undefined` names each None figure
(a split's F1 by the split's name, an accuracy as `<split>/error_acc`, the average as `average_f1`) with why."""

from __future__ import annotations

import msgspec

from ..spec import Summary


class SplitDetail(msgspec.Struct, kw_only=True):
    """One split: the accuracies on its erroneous and its correct solutions, and how many of each it has."""

    error_acc: float | None
    correct_acc: float | None
    erroneous: int
    correct: int


class Intervals(msgspec.Struct, kw_only=True):
    """95% intervals of the splits' F1 and of the average F1."""

    splits: dict[str, list[float | None]]
    average_f1: list[float | None]


class Undecided(msgspec.Struct, kw_only=True):
    """Solutions whose scores stop before a decision: no prediction, counted as misses."""

    solutions: int
    why: str


class ProcessBenchSummary(Summary, kw_only=True):
    """F1 per split and their average, each split's accuracies, 95% intervals; `undecided` only when some
    solution's scores stop before a decision."""

    threshold: float
    splits: dict[str, float | None]
    average_f1: float | None
    n: dict[str, int]
    details: dict[str, SplitDetail]
    ci: Intervals
    undecided: Undecided | msgspec.UnsetType = msgspec.UNSET
    undefined: dict[str, str] | msgspec.UnsetType = msgspec.UNSET  # a None figure -> why (`undefined_reasons`)
