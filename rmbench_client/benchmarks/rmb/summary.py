"""RMB's summary, as `score` returns it and `summary.json` begins."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..spec import Interval, Summary


class RmbIntervals(msgspec.Struct, kw_only=True):
    """95% intervals of the scenarios, the sets and overall ([NaN, NaN] where no set was scored)."""

    scenarios: dict[str, Interval]
    sets: dict[str, Interval]
    overall: Interval


class RmbSummary(Summary, kw_only=True):
    """Accuracy per scenario (a category_path) with its records, per set with its records, and overall (the plain
    mean of the sets; NaN with none); `nonfinite_scores` where some reward was not finite. `overall` and `ci` are
    unset only in the summary of a run that scored nothing (`{"benchmark": ...}` alone)."""

    scenarios: dict[str, float] = msgspec.field(default_factory=dict)
    n: dict[str, int] = msgspec.field(default_factory=dict)
    sets: dict[str, float] = msgspec.field(default_factory=dict)
    set_n: dict[str, int] = msgspec.field(default_factory=dict)
    overall: float | UnsetType = UNSET
    ci: RmbIntervals | UnsetType = UNSET
    nonfinite_scores: int | UnsetType = UNSET
