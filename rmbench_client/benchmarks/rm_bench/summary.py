"""RM-Bench's summary, as `score` returns it and `summary.json` begins: per domain the levels, n, the 3x3 matrix
and intervals; the same over the domains (`overall`, empty where no domain was scored); the style bias."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..shared.style_bias import StyleBias
from ..spec import Interval, Summary


class LevelIntervals(msgspec.Struct, kw_only=True):
    """95% intervals of easy / normal / hard / avg."""

    easy: Interval
    normal: Interval
    hard: Interval
    avg: Interval


class Domain(msgspec.Struct, kw_only=True):
    """One domain: its levels, prompts, 3x3 matrix (chosen style x rejected style) and intervals."""

    easy: float
    normal: float
    hard: float
    avg: float
    n: int
    matrix: list[list[float]]
    ci: LevelIntervals


class Overall(msgspec.Struct, kw_only=True):
    """The levels over the domains (each domain weighs the same), their mean matrix and prompts; every field unset
    (`{}`) where no domain was scored."""

    easy: float | UnsetType = UNSET
    normal: float | UnsetType = UNSET
    hard: float | UnsetType = UNSET
    avg: float | UnsetType = UNSET
    matrix: list[list[float]] | UnsetType = UNSET
    n: int | UnsetType = UNSET
    ci: LevelIntervals | UnsetType = UNSET


class RMBenchSummary(Summary, kw_only=True):
    """Domains and overall (empty in the summary of a run that scored nothing: `{"benchmark": ...}` alone); the
    style bias where the scores are a reward's (not a pairwise judge's)."""

    domains: dict[str, Domain] = msgspec.field(default_factory=dict)
    overall: Overall = msgspec.field(default_factory=Overall)
    style_bias: StyleBias | UnsetType = UNSET
