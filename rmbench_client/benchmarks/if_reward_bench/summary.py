"""IF-RewardBench's summary: the ranking figures (pairwise accuracy, Kendall's tau-b) per instruction type, overall,
and broken down as its metrics scripts print them."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..spec import Interval, Summary

Figures = dict[str, float]  # "accuracy", "tau"


class IfIntervals(msgspec.Struct, kw_only=True):
    """95% intervals of the figures per instruction type and overall."""

    instruction_types: dict[str, dict[str, Interval]]
    overall: dict[str, Interval]


class IfRewardBenchSummary(Summary, kw_only=True):
    """`overall`: the mean of the three instruction types' figures (its "Overall"); `instruction_types`,
    `model_types`, `turns` and `constraint_counts`: its `metrics_per_...` breakdowns, each instruction weighing the
    same within a group; `n`: the instructions of each instruction type. Unset only in the summary of a run that
    scored nothing."""

    overall: Figures | UnsetType = UNSET
    instruction_types: dict[str, Figures] = msgspec.field(default_factory=dict)
    n: dict[str, int] = msgspec.field(default_factory=dict)
    model_types: dict[str, Figures] = msgspec.field(default_factory=dict)
    turns: dict[str, Figures] = msgspec.field(default_factory=dict)
    constraint_counts: dict[str, Figures] = msgspec.field(default_factory=dict)
    ci: IfIntervals | UnsetType = UNSET
