"""PPE Preference's summary, as `score` returns it and `summary.json` begins."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..spec import Interval, Summary


class PreferenceIntervals(msgspec.Struct, kw_only=True):
    """95% intervals of the categories and of the accuracy ([NaN, NaN] with no battle)."""

    categories: dict[str, Interval]
    accuracy: Interval


class PreferenceSummary(Summary, kw_only=True):
    """Accuracy per category (those some battle is in) with its battles, the battles of each group (a place in the
    categories, `<language>/<flag>+...`), and the accuracy over every battle (NaN with none); `tied_rewards` where
    rewards (not a judge's credits) were scored. `accuracy` and `ci` are unset only in the summary of a run that
    scored nothing (`{"benchmark": ...}` alone)."""

    categories: dict[str, float] = msgspec.field(default_factory=dict)
    category_n: dict[str, int] = msgspec.field(default_factory=dict)
    n: dict[str, int] = msgspec.field(default_factory=dict)
    accuracy: float | UnsetType = UNSET
    ci: PreferenceIntervals | UnsetType = UNSET
    tied_rewards: int | UnsetType = UNSET
