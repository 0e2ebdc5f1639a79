"""PPE Correctness's summary, as `score` returns it and `summary.json` begins."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..spec import Interval, Summary


class BestOfK(msgspec.Struct, kw_only=True):
    """A set's best-of-K curve over K = 1..(the fewest answers of a row), its end and its maximum."""

    curve: list[float]
    end: float
    max: float


class CorrectnessIntervals(msgspec.Struct, kw_only=True):
    """95% intervals of the sets' accuracies and of their mean ([NaN, NaN] where no resample has a pair)."""

    sets: dict[str, Interval]
    accuracy: Interval


class CorrectnessSummary(Summary, kw_only=True):
    """Each set's accuracy over its sampled conflict pairs (NaN without a pair), its rows and pairs, its best-of-K
    curve where rewards were scored (a judge's credits give none), and the plain mean of the sets' accuracies (NaN
    with none). `accuracy` and `ci` are unset only in the summary of a run that scored nothing
    (`{"benchmark": ...}` alone)."""

    sets: dict[str, float] = msgspec.field(default_factory=dict)
    n: dict[str, int] = msgspec.field(default_factory=dict)
    pairs: dict[str, int] = msgspec.field(default_factory=dict)
    best_of_k: dict[str, BestOfK] | UnsetType = UNSET
    accuracy: float | UnsetType = UNSET
    ci: CorrectnessIntervals | UnsetType = UNSET
