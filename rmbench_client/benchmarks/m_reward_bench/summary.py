"""M-RewardBench's summary: per language its subsets' accuracy, its categories and its score; the average over the
languages its leaderboard averages, and their spread."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..spec import Interval, Summary


class LanguageScores(msgspec.Struct, kw_only=True):
    """One language: each subset's accuracy (`n` pairs), each category's weighted accuracy, the language's score
    (the categories' mean; None where no category was scored)."""

    subsets: dict[str, float]
    n: dict[str, int]
    categories: dict[str, float]
    score: float | None


class MRewardBenchIntervals(msgspec.Struct, kw_only=True):
    """95% intervals of each language's score and of the average."""

    languages: dict[str, Interval]
    average: Interval | UnsetType = UNSET


class MRewardBenchSummary(Summary, kw_only=True):
    """`languages` by code; `average`: the mean of the language scores but English's (the leaderboard's "Avg"),
    `std` their sample standard deviation ("Std"); None where undefined (`undefined` says why). Unset only in the
    summary of a run that scored nothing."""

    languages: dict[str, LanguageScores] = msgspec.field(default_factory=dict)
    average: float | None | UnsetType = UNSET
    std: float | None | UnsetType = UNSET
    ci: MRewardBenchIntervals | UnsetType = UNSET
    undefined: dict[str, str] | UnsetType = UNSET
