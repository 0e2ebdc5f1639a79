"""What both process benchmarks (PRMBench, ProcessBench) share: every solution's step scores and labels checked and
laid end to end, per-solution counts summed with numpy, and stratified bootstrap sums of those counts; reading the
step scores of a per-sample line; the F1 cells and the caption of their tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import constants as C
from ...errors import DataError
from ...examples import PromptScores
from ..spec import Interval, StepRule
from .lines import floats


@dataclass(frozen=True)
class Flat:
    """The solutions' steps end to end: step scores where scored, the labels of every labelled step."""

    scores: np.ndarray  # every step score given, solution after solution
    labels: np.ndarray  # every step label (1 correct, 0 erroneous), solution after solution
    scored: np.ndarray  # per solution: how many scores it has
    labelled: np.ndarray  # per solution: how many labels it has
    owner: np.ndarray  # per score: its solution's index

    def first_below(self, threshold: float) -> np.ndarray:
        """Per solution: the index of its first step scored below `threshold`, -1 when none is."""
        below = np.flatnonzero(self.scores < threshold)
        first = np.full(len(self.scored), -1, dtype=np.int64)
        owners = self.owner[below]
        keep = np.r_[True, owners[1:] != owners[:-1]] if len(below) else np.zeros(0, dtype=bool)
        starts = np.r_[0, np.cumsum(self.scored)[:-1]]
        first[owners[keep]] = below[keep] - starts[owners[keep]]
        return first


def flatten(records: Sequence[PromptScores]) -> Flat:
    """The records' step scores and labels as arrays; a DataError naming the solution for one without step scores
    or labels (not a process run's), or with a non-finite score."""
    for r in records:
        if r.steps is None or r.step_labels is None:
            raise DataError(f"prompt {r.id}: no step scores and labels (a process benchmark needs a process model)")
    scored = np.fromiter((len(r.steps or ()) for r in records), dtype=np.int64, count=len(records))
    labelled = np.fromiter((len(r.step_labels or ()) for r in records), dtype=np.int64, count=len(records))
    scores = np.fromiter((v for r in records for v in r.steps or ()), dtype=np.float64, count=int(scored.sum()))
    labels = np.fromiter((v for r in records for v in r.step_labels or ()), dtype=np.int64, count=int(labelled.sum()))
    bad = np.flatnonzero(~np.isfinite(scores))
    owner = np.repeat(np.arange(len(records)), scored)
    wrong = np.flatnonzero((labels != 0) & (labels != 1))
    if len(wrong):
        solution = int(np.searchsorted(np.cumsum(labelled), wrong[0], side="right"))
        raise DataError(f"prompt {records[solution].id}: step labels must be 1 (correct) or 0 (erroneous)")
    if len(bad):
        raise DataError(f"prompt {records[int(owner[bad[0]])].id}: a step score is not a finite number")
    return Flat(scores, labels, scored, labelled, owner)


def sums(values: np.ndarray, groups: Sequence[str]) -> dict[str, np.ndarray]:
    """Per group: the sum of its solutions' rows of `values` (n, k)."""
    out: dict[str, np.ndarray] = {}
    for g in sorted(set(groups)):
        out[g] = values[np.asarray(groups) == g].sum(axis=0)
    return out


def replicate_sums(
    values: np.ndarray, groups: Sequence[str], seed: int, samples: int | None = None
) -> dict[str, np.ndarray]:
    """Per group: (samples, k) bootstrap sums of its solutions' rows, each group resampled within itself."""
    rng = np.random.default_rng(seed)
    n_samples = C.BOOTSTRAP_SAMPLES if samples is None else samples
    names = np.asarray(groups)
    out: dict[str, np.ndarray] = {}
    for g in sorted(set(groups)):
        rows = values[names == g].astype(np.float64)
        draws = rng.multinomial(len(rows), np.full(len(rows), 1.0 / len(rows)), size=n_samples)
        out[g] = draws @ rows
    return out


def interval(replicates: np.ndarray) -> list[float | None]:
    """The 95% percentile interval; None bounds where the number is undefined in every replicate."""
    finite = replicates[np.isfinite(replicates)]
    if not len(finite):
        return [None, None]
    lo, hi = bounds(finite)
    return [lo, hi]


def bounds(replicates: np.ndarray) -> Interval:
    """The 95% percentile interval of a number defined in every replicate (PRMBench's: an undefined F1 is -1)."""
    tail = (1.0 - C.CONFIDENCE) / 2.0 * 100.0
    lo, hi = np.percentile(replicates, [tail, 100.0 - tail])
    return [float(lo), float(hi)]


def from_means(means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """compare's group means back to group sums (the numbers here are ratios of sums)."""
    return {g: m * sizes[g] for g, m in means.items()}


def step_scores(rec: dict[str, Any], where: str) -> tuple[float, ...]:
    """A per-sample line's `step_scores`: numbers, possibly none (an input cut before its first step)."""
    value = rec.get("step_scores")
    if not isinstance(value, list):
        raise DataError(f"{where}: 'step_scores' must be a list of numbers")
    return floats(value, where, "step_scores") if value else ()


def count_field(value: Any, where: str, key: str, low: int) -> int:
    """A per-sample line's whole-number field, at least `low`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise DataError(f"{where}: '{key}' must be an integer >= {low}")
    return value


def f1_cell(value: float | None) -> list[float] | None:
    """A table cell of an F1: None where it is undefined (PRMBench's -1)."""
    return None if value is None or value < 0 else [value]


def known(interval: Sequence[float | None]) -> Interval | None:
    """An interval with its bounds; None for one without (a number undefined in every replicate)."""
    lo, hi = interval
    return None if lo is None or hi is None else [lo, hi]


def defined(intervals: Mapping[str, Sequence[float | None]]) -> dict[str, Interval]:
    """The intervals with bounds, by name (ProcessBench's F1 of a split of one kind has none)."""
    return {name: bounds for name, interval in intervals.items() if (bounds := known(interval)) is not None}


def caption(threshold: float, cut: tuple[int, int] | None = None, undecided: int | None = None) -> str:
    """A process benchmark's table caption: the threshold, and the solutions cut (with the steps not counted) or
    left undecided."""
    parts = [f"threshold {threshold}"]
    if cut is not None:
        parts.append(f"{cut[0]} solution(s) cut: {cut[1]} step(s) not counted")
    if undecided is not None:
        parts.append(f"{undecided} solution(s) undecided (cut), counted as misses")
    return "; ".join(parts)


# each step rule in words, with the threshold called T (`--threshold`'s help, the docs)
RULE_WORDS: dict[StepRule, str] = {
    "above": "a step is correct when its score is above T (a score equal to T: erroneous)",
    "not below": "a step is correct when its score is at or above T (the first step below T is the predicted error)",
}


def judged_correct(score: float, threshold: float, rule: StepRule) -> bool:
    """Whether a step's score judges it correct under a benchmark's rule (`Benchmark.step_rule`)."""
    return score > threshold if rule == "above" else score >= threshold
