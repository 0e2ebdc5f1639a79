"""RewardBench's summary, as `score` returns it and `summary.json` begins; a reward-bench results file (subset
accuracies alone) gives one without `n` and intervals."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..shared.style_bias import StyleBias
from ..spec import Interval, Summary


class RewardBenchIntervals(msgspec.Struct, kw_only=True):
    """95% intervals of the subsets, the sections and the score ([NaN, NaN] where no section was scored)."""

    subsets: dict[str, Interval]
    sections: dict[str, Interval]
    score: Interval


class RewardBenchSummary(Summary, kw_only=True):
    """Subset accuracies, section scores and the final score (NaN where no section was scored); `n` and `ci` where
    it was scored from prompts; `style_bias` given response lengths. The score is unset only in the summary of a
    run that scored nothing (`{"benchmark": ...}` alone)."""

    subsets: dict[str, float] = msgspec.field(default_factory=dict)
    sections: dict[str, float] = msgspec.field(default_factory=dict)
    n: dict[str, int] | UnsetType = UNSET
    score: float | UnsetType = UNSET
    ci: RewardBenchIntervals | UnsetType = UNSET
    style_bias: StyleBias | UnsetType = UNSET
