"""RewardBench 2's summary, as `score` returns it and `summary.json` begins; a reward-bench results file (subset
scores alone) gives one without `n`, the Ties terms and intervals."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..spec import Summary


class TiesTerms(msgspec.Struct, kw_only=True):
    """The terms of the Ties score (None where no number N has both a ref and a tied prompt: upstream's NaN) and
    the prompt counts: ref and tied prompts, and the numbers N that have both."""

    tied_accuracy: float
    ref_accuracy: float
    correctness_preferred: float | None
    correctness_preferred_hard: float | None
    correctness_margin_score: float | None
    ref: int
    tied: int
    pairs: int


class Ratings(msgspec.Struct, kw_only=True):
    """A rating judge's unparsed ratings, and the prompts none of whose answers it rated."""

    unparsed: int
    unrated_prompts: int


class RewardBench2Intervals(msgspec.Struct, kw_only=True):
    """95% intervals of the subsets and of the final score ([None, None] where it is never defined)."""

    subsets: dict[str, list[float | None]]
    score: list[float | None]


class RewardBench2Summary(Summary, kw_only=True):
    """Subset scores (Ties: its composite) and the final score, their plain mean; `n` and `ci` where it was scored
    from prompts, `ties` where Ties was, `ratings` for a rating judge's, `nonfinite_scores` where some score was not
    finite. Ties, and so the final score, is None where it is undefined (no number N with both a ref and a tied
    prompt: upstream's NaN), and `undefined` says why. The score is unset only in the summary of a run that scored
    nothing (`{"benchmark": ...}` alone)."""

    ties: TiesTerms | UnsetType = UNSET
    subsets: dict[str, float | None] = msgspec.field(default_factory=dict)
    n: dict[str, int] | UnsetType = UNSET
    score: float | None | UnsetType = UNSET
    ci: RewardBench2Intervals | UnsetType = UNSET
    ratings: Ratings | UnsetType = UNSET
    nonfinite_scores: int | UnsetType = UNSET
    undefined: dict[str, str] | UnsetType = UNSET  # a None figure -> why
