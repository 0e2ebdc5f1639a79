"""PPE Correctness: can the reward model tell a verified-correct answer from a wrong one among K = 32 samples of
the same model (MMLU-Pro, MATH, GPQA, IFEval, MBPP-Plus), as lmarena's PPE reports it (`lmarena/PPE`,
`utils/scorers.py`: `ConflictScorer` for the accuracy, `BestOfKScorer` for the best-of-K curve; the benchmark
classes of `benchmarks/` expand each row's `sampled_conflict_pairs`).

PPE's repository could not be read here (no copy reachable); what follows is its published definition (paper
arXiv 2410.14872; its blog's tables) with the choices its text leaves open named:
    pair credit   = 1 if r(correct answer) > r(incorrect answer), 0 if lower, 1/2 if equal   (a judge: its credit)
    set accuracy  = sum of pair credits / number of pairs, over the set's sampled conflict pairs (pair-weighted)
    accuracy      = plain mean of the sets' accuracies: the "PPE Correctness" of model cards (the mean of PPE's
                    five published set accuracies is its published Mean column)
    best-of-K(K)  = mean over the set's rows of E[ correctness of the top-reward answer of a uniformly random
                    K-subset of the row's answers ]  (exact, not sampled; rewards that tie share the expectation:
                    a tied group's answers are equally likely to be picked); "end" = best-of-K at K = every
                    answer, "max" = its largest value over K
Equal rewards count 1/2 (the open choice: no order of the pair favoured). Best-of-K needs every answer's reward,
so a judge (asked the pairs only, as PPE asks judges) has accuracy only. PPE's AUC and "loss" are not computed.
Intervals: rows resampled within each set (sums and counts of pair credits together), combined as the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from msgspec import UNSET, UnsetType

from ... import constants as C
from ...errors import DataError
from ...examples import PromptScores
from ..shared import bootstrap
from ..shared.credits import finite_matrix, pair_credits
from ..spec import Interval, Lengths, Records, Samples
from .constants import SETS
from .summary import BestOfK, CorrectnessIntervals, CorrectnessSummary

SUMMARY = CorrectnessSummary  # what `score` returns


def best_of_k_curve(rewards: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """E[correctness of the top-reward answer among K drawn without replacement], K = 1..n, exactly: the top of
    a K-subset has the reward of tie group g with probability (C(n-a, K) - C(n-a-m, K)) / C(n, K) (a answers
    above the group, m in it), and is then any of the group's answers in the subset alike."""
    n = len(rewards)
    values, inverse = np.unique(-rewards, return_inverse=True)  # groups from the highest reward down
    sizes = np.bincount(inverse, minlength=len(values))
    mean_correct = np.bincount(inverse, weights=correct, minlength=len(values)) / sizes
    above = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    curve = np.empty(n)
    for k in range(1, n + 1):
        total = math.comb(n, k)
        weights = [(math.comb(n - a, k) - math.comb(n - a - m, k)) / total for a, m in zip(above, sizes, strict=True)]
        curve[k - 1] = float(np.dot(weights, mean_correct))
    return curve


def _row_curve(rec: PromptScores) -> np.ndarray:
    rewards = finite_matrix([rec.chosen + rec.rejected], [rec.id], "scores", len(rec.chosen) + len(rec.rejected))[0]
    return best_of_k_curve(rewards, np.r_[np.ones(len(rec.chosen)), np.zeros(len(rec.rejected))])


def _best_of_k(records: Sequence[PromptScores]) -> BestOfK:
    """The set's curve over K = 1..(the fewest answers of a row), its end and its maximum."""
    curves = [_row_curve(r) for r in records]
    k = min(len(c) for c in curves)
    curve = np.mean([c[:k] for c in curves], axis=0)
    return BestOfK(curve=[float(v) for v in curve], end=float(curve[-1]), max=float(curve.max()))


def prompt_values(records: Sequence[PromptScores]) -> np.ndarray:
    """(n, 2) per row: the sum of its pair credits and its number of pairs (a set's accuracy is their ratio)."""
    rows = [pair_credits(r) for r in records]
    return np.asarray([[c.sum(), len(c)] for c in rows], dtype=np.float64).reshape(len(rows), 2)


def _ratio(values: np.ndarray) -> Any:
    """Accuracy from (sum, count) means (..., 2); NaN where a set has no pair."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return values[..., 0] / values[..., 1]


def _mean_of_sets(values: Sequence[Any]) -> Any:
    """The plain mean of the sets' accuracies, leaving out a set without a pair (NaN); NaN when none has one."""
    stacked = np.stack([np.asarray(v, dtype=np.float64) for v in values])
    finite = np.isfinite(stacked)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(finite, stacked, 0.0).sum(axis=0) / finite.sum(axis=0)


def _interval(replicates: np.ndarray) -> list[float]:
    """The 95% interval of the replicates that have a pair (a resample of only pairless rows has none)."""
    kept = replicates[np.isfinite(replicates)]
    return bootstrap.interval(kept) if kept.size else [math.nan, math.nan]


def score(
    records: Records, seed: int = 0, samples: Samples = None, lengths: Lengths | None = None
) -> CorrectnessSummary:
    """Summary: each set's accuracy (pairs, rows, 95% interval) and best-of-K, and the mean accuracy."""
    by_set = bootstrap.by_group(records)
    unknown = [s for s in by_set if s not in SETS]
    if unknown:
        raise DataError(f"{', '.join(unknown)}: no PPE correctness set ({', '.join(SETS)})")
    rng = bootstrap.rng(seed)
    n_samples = C.BOOTSTRAP_SAMPLES if samples is None else samples
    sets: dict[str, float] = {}
    n: dict[str, int] = {}
    pairs: dict[str, int] = {}
    reps: dict[str, np.ndarray] = {}
    judged = any(r.results is not None for r in records)
    best_of_k: dict[str, BestOfK] = {}  # every answer's reward: not a judge's
    for name in (s for s in SETS if s in by_set):
        values = prompt_values(by_set[name])
        sets[name] = float(_ratio(values.sum(axis=0)))
        n[name] = len(values)
        pairs[name] = int(values[:, 1].sum())
        reps[name] = _ratio(bootstrap.replicate_means(values, rng, n_samples))
        if not judged:
            best_of_k[name] = _best_of_k(by_set[name])
    return CorrectnessSummary(
        benchmark="ppe-correctness",
        sets=sets,
        n=n,
        pairs=pairs,
        best_of_k=UNSET if judged else best_of_k,
        accuracy=float(_mean_of_sets(list(sets.values()))) if sets else math.nan,
        ci=CorrectnessIntervals(
            sets={name: _interval(r) for name, r in reps.items()},
            accuracy=_interval(_mean_of_sets(list(reps.values()))) if reps else [math.nan, math.nan],
        ),
    )


def headline_numbers(means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """compare's columns from each set's mean (sum, count) per row (..., 2): each set's accuracy, then their mean."""
    out = {name: _ratio(means[name]) for name in SETS if name in means}
    out["accuracy"] = _mean_of_sets(list(out.values()))
    return out


def headline_intervals(summary: CorrectnessSummary) -> dict[str, Interval]:
    """The summary's 95% intervals of the same numbers."""
    ci = summary.ci
    return {} if isinstance(ci, UnsetType) else {**ci.sets, "accuracy": ci.accuracy}


def headline(summary: CorrectnessSummary) -> list[tuple[str, float | None]]:
    """compare's columns: the five sets, then their mean accuracy (PPE Correctness)."""
    accuracy = None if isinstance(summary.accuracy, UnsetType) else summary.accuracy
    return [(name, summary.sets.get(name)) for name in SETS] + [("accuracy", accuracy)]


def scored_groups(summary: CorrectnessSummary) -> list[str]:
    """The sets the summary scored."""
    return list(summary.sets)
