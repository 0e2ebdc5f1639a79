"""PPE Preference: agreement with Chatbot Arena's human votes, per category and overall (the "PPE Preference" of
model cards), as lmarena's PPE reports it (`lmarena/PPE`, `utils/scorers.py`, `HumanPreferenceScorer`: its result
keys `overall` and one per category, each with an `accuracy`).

PPE's repository could not be read here (no copy reachable); what follows is its published definition (paper
arXiv 2410.14872, section 3; its blog's tables) with the choices its text leaves open named:
    credit_p  = 1 if r(winner's answer) > r(loser's), 0 if lower, 1/2 if equal   (a judge: its credit, a tie 1/2)
    accuracy  = mean of credit_p over the decisive battles (human ties are not scored: datasets/ppe_preference.py)
    category  = the same mean over the battles whose prompt has the category's flag or language, or the battle
                its tag (`shorter_won`, `similar_response`: datasets/ppe_preference.py; PPE_CATEGORIES)
Equal rewards are the open choice: 1/2 keeps the number independent of which answer is shown first; so is
`similar_response`'s threshold on the hub's `sim` (constants.PPE_SIMILAR_RESPONSE_SIM). PPE's
model-ranking metrics (Spearman, Kendall, separability, confidence agreement, Brier and row-wise Pearson of the
20 arena models' Bradley-Terry ratings) are not computed. A record's group is its place in the categories
(`<language>/<flag>+...`), so every category's accuracy is a function of the groups' means (compare's test).
Intervals: groups resampled independently, combined as the point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from msgspec import UNSET, UnsetType

from ... import constants as C
from ...errors import DataError
from ...examples import PromptScores
from ..shared import bootstrap
from ..shared.credits import finite_matrix, half_for_ties
from ..spec import Interval, Lengths, Records, Samples
from .constants import CATEGORIES
from .summary import PreferenceIntervals, PreferenceSummary

SUMMARY = PreferenceSummary  # what `score` returns


def tags(group: str) -> set[str]:
    """A group's language bucket and flags: 'english/hard_prompt+is_code' -> {english, hard_prompt, is_code}."""
    bucket, _, flags = group.partition("/")
    return {bucket, *filter(None, flags.split("+"))}


def in_category(group: str, category: str) -> bool:
    tag, held = CATEGORIES[category]
    return (tag in tags(group)) == held


def credits(records: Sequence[PromptScores]) -> np.ndarray:
    """Each battle's credit: the rewards' order (1, 0, or 1/2 when equal), or a judge's credit."""
    ids = [r.id for r in records]
    if any(r.results is not None for r in records):
        if not all(r.results is not None for r in records):
            raise DataError("judge results and reward scores cannot be scored together")
        judged = finite_matrix([r.results or () for r in records], ids, "results", 1)[:, 0]
        if ((judged < 0) | (judged > 1)).any():
            raise DataError("judge results must be credits in [0, 1]")
        return judged
    chosen = finite_matrix([r.chosen for r in records], ids, "score_chosen", 1)[:, 0]
    rejected = finite_matrix([r.rejected for r in records], ids, "score_rejected", 1)[:, 0]
    return half_for_ties(chosen, rejected)


def _combine(means: Mapping[str, np.ndarray], sizes: Mapping[str, int], groups: Sequence[str]) -> np.ndarray:
    """The size-weighted mean of these groups' means (non-empty)."""
    total = sum(sizes[g] for g in groups)
    combined: np.ndarray = np.sum([means[g] * (sizes[g] / total) for g in groups], axis=0)
    return combined


def members(groups: Sequence[str]) -> dict[str, list[str]]:
    """Each category that some group is in -> its groups, in PPE's order; then "accuracy" -> every group."""
    out = {name: [g for g in groups if in_category(g, name)] for name in CATEGORIES}
    return {name: found for name, found in out.items() if found} | ({"accuracy": list(groups)} if groups else {})


def score(
    records: Records, seed: int = 0, samples: Samples = None, lengths: Lengths | None = None
) -> PreferenceSummary:
    """Summary: accuracy overall and per category, with n and 95% intervals, and how many battles tied."""
    credit = {g: credits(recs) for g, recs in bootstrap.by_group(records).items()}
    sizes = {g: len(c) for g, c in credit.items()}
    rng = bootstrap.rng(seed)
    n_samples = C.BOOTSTRAP_SAMPLES if samples is None else samples
    points = {g: np.asarray(c.mean()) for g, c in credit.items()}
    reps = {g: bootstrap.replicate_means(c, rng, n_samples) for g, c in credit.items()}
    parts = members(list(credit))
    overall = parts.pop("accuracy", [])
    rewards = bool(records) and records[0].results is None  # a judge's credits of 1/2 are no tied rewards
    return PreferenceSummary(
        benchmark="ppe-preference",
        categories={name: float(_combine(points, sizes, gs)) for name, gs in parts.items()},
        category_n={name: sum(sizes[g] for g in gs) for name, gs in parts.items()},
        n=sizes,
        accuracy=float(_combine(points, sizes, overall)) if overall else math.nan,
        ci=PreferenceIntervals(
            categories={name: bootstrap.interval(_combine(reps, sizes, gs)) for name, gs in parts.items()},
            accuracy=bootstrap.interval(_combine(reps, sizes, overall)) if overall else [math.nan, math.nan],
        ),
        tied_rewards=int(sum((c == 0.5).sum() for c in credit.values())) if rewards else UNSET,
    )


def prompt_values(records: Sequence[PromptScores]) -> np.ndarray:
    """(n, 1) per-battle credit: its mean over a group's battles is the group's accuracy."""
    return credits(records)[:, None]


def headline_numbers(means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """compare's columns from group accuracies (..., 1) and sizes: each category present, then the accuracy."""
    acc = {g: m[..., 0] for g, m in means.items()}
    return {name: _combine(acc, sizes, gs) for name, gs in members(list(acc)).items()}


def headline_intervals(summary: PreferenceSummary) -> dict[str, Interval]:
    """The summary's 95% intervals of the same numbers."""
    ci = summary.ci
    return {} if isinstance(ci, UnsetType) else {**ci.categories, "accuracy": ci.accuracy}


def headline(summary: PreferenceSummary) -> list[tuple[str, float | None]]:
    """compare's columns: the categories scored, then the accuracy (PPE Preference)."""
    accuracy = None if isinstance(summary.accuracy, UnsetType) else summary.accuracy
    return [*summary.categories.items(), ("accuracy", accuracy)]


def scored_groups(summary: PreferenceSummary) -> list[str]:
    """The categories the summary scored."""
    return list(summary.categories)
