"""Accuracy on your own preference pairs, as RewardBench counts a pair.

correct_p      = [ chosen_p > rejected_p ]             strict: a tie counts as wrong (a judge: its credit)
acc_s          = mean of correct_p over the prompts of subset s
accuracy       = mean of correct_p over every prompt    (prompt-weighted)
macro_accuracy = mean of acc_s over the subsets         (every subset weighs the same)
Intervals: subsets resampled independently, each replicate combined exactly as the point estimate.
"style_bias" (given response lengths): the rank correlation of score and length (scoring/style_bias.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..examples import PromptScores
from . import bootstrap, style_bias
from .checks import outcomes
from .types import Lengths, Records, Samples


def score(records: Records, seed: int = 0, samples: Samples = None, lengths: Lengths | None = None) -> dict:
    """Summary: per-subset accuracy with n, prompt-weighted and macro accuracy, and 95% intervals for each."""
    correct, reps = bootstrap.pair_accuracies(records, seed, samples)
    n = {name: len(c) for name, c in correct.items()}
    summary: dict[str, Any] = {
        "benchmark": "pairwise",
        "subsets": {name: float(c.mean()) for name, c in correct.items()},
        "n": n,
    }
    if not correct:
        nan2 = [math.nan, math.nan]
        return summary | {"accuracy": math.nan, "macro_accuracy": math.nan, "ci": {"subsets": {}, "accuracy": nan2}}
    total = sum(n.values())
    summary["accuracy"] = float(np.concatenate(list(correct.values())).mean())
    summary["macro_accuracy"] = float(np.mean(list(summary["subsets"].values())))
    pooled = sum(reps[name] * (n[name] / total) for name in reps)
    summary["ci"] = {
        "subsets": {name: bootstrap.interval(r) for name, r in reps.items()},
        "accuracy": bootstrap.interval(np.asarray(pooled)),
        "macro_accuracy": bootstrap.interval(np.mean(np.stack(list(reps.values())), axis=0)),
    }
    bias = style_bias.diagnose(records, 1, (), lengths, seed, samples)
    if bias is not None:
        summary["style_bias"] = bias
    return summary


def prompt_values(records: Sequence[PromptScores]) -> np.ndarray:
    """(n, 1) per-prompt correctness: its mean over a subset's prompts is the subset accuracy."""
    return outcomes(records, 1)[:, 0, :]


def headline_numbers(means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """compare's columns from subset accuracies (..., 1) and sizes: each subset, the accuracy (prompt-weighted)
    and the macro average."""
    acc = {name: means[name][..., 0] for name in sorted(means)}
    total = sum(sizes[name] for name in acc)
    out = dict(acc)
    out["accuracy"] = np.sum([acc[name] * (sizes[name] / total) for name in acc], axis=0)
    out["macro"] = np.mean([acc[name] for name in acc], axis=0)
    return out


def headline_intervals(summary: dict) -> dict[str, list[float]]:
    """The summary's 95% intervals of the same numbers."""
    return bootstrap.summary_intervals(summary, "subsets", {"accuracy": "accuracy", "macro": "macro_accuracy"})
