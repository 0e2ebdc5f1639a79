"""ProcessBench, as its authors score it (QwenLM/ProcessBench, commit e8024636bcabdf8bd514440551b531d3f90dd18b,
`code/run_eval.py` and `code/run_eval_prm_rlhflow.py`, the lines after the predictions are made):

    prediction = the index of the first step scored strictly below the threshold (`prm.threshold`, 0.5; a score
                 equal to it passes), or -1 when no step is (the RLHFlow script: the first step judged wrong)
    match      = prediction == label (the earliest wrong step's index, -1 for a correct solution)
    error acc  = mean match over the split's erroneous solutions (label != -1)
    correct acc= mean match over its correct solutions (label == -1)
    F1         = 2 * error acc * correct acc / (error acc + correct acc), per split
    average F1 = the plain mean of the four splits' F1 (the paper's "Avg. F1")
Upstream divides by zero when both accuracies are 0; here F1 is 0 then (and None when a split has no solution of
one kind). A generative critic's answer comes here as step scores too (1 before the step it names, 0 at it).

Scores that stop before a decision (an input cut at the length limit: no score below the threshold among the
steps scored, fewer scores than labelled steps) give no prediction: counted as a miss, as upstream counts a
critique whose answer cannot be read (`prediction = None`), and counted in the summary (`undecided`).
Intervals: solutions resampled within each split (and within its erroneous and correct ones alike), 1,000
replicates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...constants import PRM_THRESHOLD
from ...errors import DataError
from ...examples import PromptScores
from ..shared import steps as S
from ..spec import Interval, Lengths, Records, Samples
from .constants import SPLITS
from .summary import Intervals, ProcessBenchSummary, SplitDetail, Undecided

SUMMARY = ProcessBenchSummary  # what `score` returns

SPLITS = SPLITS
VALUES = ("erroneous", "erroneous_matched", "correct", "correct_matched")


def predictions(records: Sequence[PromptScores], threshold: float = PRM_THRESHOLD) -> tuple[np.ndarray, np.ndarray]:
    """Per solution: its label (earliest wrong step, -1 none) and prediction (first step below the threshold,
    -1 none, -2 undecided: the scores stop before a decision)."""
    flat = S.flatten(records)
    ends = np.cumsum(flat.labelled)
    has_error = np.zeros(len(records), dtype=bool)
    label = np.full(len(records), -1, dtype=np.int64)
    zero = np.flatnonzero(flat.labels == 0)
    if len(zero):
        owners = np.searchsorted(ends, zero, side="right")
        first = np.r_[True, owners[1:] != owners[:-1]]
        label[owners[first]] = zero[first] - np.r_[0, ends[:-1]][owners[first]]
        has_error[owners[first]] = True
    correct = ~has_error
    over = np.flatnonzero(correct & (flat.scored > flat.labelled))
    if len(over):
        r = records[int(over[0])]
        raise DataError(f"prompt {r.id}: {len(r.steps or ())} step scores for {len(r.step_labels or ())} steps")
    predicted = flat.first_below(threshold)
    undecided = (predicted == -1) & (flat.scored < flat.labelled)
    return label, np.where(undecided, -2, predicted)


def prompt_values(records: Sequence[PromptScores], threshold: float = PRM_THRESHOLD) -> np.ndarray:
    """(n, 4) per solution: erroneous, matched and erroneous, correct, matched and correct (0/1 each)."""
    label, predicted = predictions(records, threshold)
    error, match = label != -1, predicted == label
    return np.stack([error, error & match, ~error, ~error & match], axis=1).astype(np.float64)


def _f1(sums: np.ndarray) -> dict[str, np.ndarray]:
    """Error acc, correct acc and F1 of (..., 4) summed values."""
    with np.errstate(divide="ignore", invalid="ignore"):
        error_acc = np.where(sums[..., 0] > 0, sums[..., 1] / sums[..., 0], np.nan)
        correct_acc = np.where(sums[..., 2] > 0, sums[..., 3] / sums[..., 2], np.nan)
        total = error_acc + correct_acc
        f1 = np.where(total > 0, 2 * error_acc * correct_acc / total, np.where(np.isnan(total), np.nan, 0.0))
    return {"error_acc": error_acc, "correct_acc": correct_acc, "f1": f1}


def numbers(sums: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each split's F1 and the average F1 over the splits present, from per-split (..., 4) sums."""
    out = {split: _f1(v)["f1"] for split, v in sums.items()}
    out["average_f1"] = np.mean([out[s] for s in SPLITS if s in out], axis=0)
    return out


def _num(x: Any) -> float | None:
    return float(x) if np.isfinite(x) else None


def undefined_reasons(details: Mapping[str, SplitDetail], splits: Mapping[str, float | None]) -> dict[str, str]:
    """Why each undefined figure is None: an accuracy over no solution, the F1 of a split with solutions of one
    kind, and the average F1 of splits one of which has no F1."""
    out: dict[str, str] = {}
    for s, d in details.items():
        if d.error_acc is None:
            out[f"{s}/error_acc"] = f"no erroneous solution in {s}"
        if d.correct_acc is None:
            out[f"{s}/correct_acc"] = f"no correct solution in {s}"
        if splits.get(s) is None:
            kind, other = ("correct", "erroneous") if d.error_acc is None else ("erroneous", "correct")
            n = d.correct + d.erroneous
            out[s] = f"F1 of {s}: its {n} solution(s) are all {kind} (no accuracy on {other} ones)"
    if missing := [s for s in splits if splits[s] is None]:
        verb = "has" if len(missing) == 1 else "have"
        out["average_f1"] = f"the average of the splits' F1, and {' and '.join(missing)} {verb} none"
    return out


def headline_numbers(means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """compare's columns from the splits' mean values: each split's F1, then the average F1."""
    return numbers(S.from_means(means, sizes))


def headline_intervals(summary: ProcessBenchSummary) -> dict[str, Interval]:
    """The summary's 95% intervals of the same numbers (none where the number is undefined in every replicate)."""
    return S.defined(summary.ci.splits | {"average_f1": summary.ci.average_f1})


def headline(summary: ProcessBenchSummary) -> list[tuple[str, float | None]]:
    """compare's columns: the four splits' F1, then their average."""
    return [(s, summary.splits.get(s)) for s in SPLITS] + [("average_f1", summary.average_f1)]


def scored_groups(summary: ProcessBenchSummary) -> list[str]:
    """The splits the summary scored."""
    return list(summary.splits)


def score(
    records: Records,
    seed: int = 0,
    samples: Samples = None,
    lengths: Lengths | None = None,
    threshold: float = PRM_THRESHOLD,
) -> ProcessBenchSummary:
    """Summary: per split the error and correct accuracies and their F1, the average F1, 95% intervals."""
    groups = [r.group for r in records]
    unknown = sorted(set(groups) - set(SPLITS))
    if unknown:
        raise DataError(f"{unknown[0]!r} is no ProcessBench split ({', '.join(SPLITS)})")
    values = prompt_values(records, threshold)
    _, predicted = predictions(records, threshold)
    totals = S.sums(values, groups)
    point = {s: _f1(v) for s, v in totals.items()}
    reps = numbers(S.replicate_sums(values, groups, seed, samples))
    average = numbers(totals)["average_f1"]
    summary = ProcessBenchSummary(
        benchmark="processbench",
        threshold=threshold,
        splits={s: _num(point[s]["f1"]) for s in SPLITS if s in point},
        average_f1=_num(average),
        n={s: groups.count(s) for s in SPLITS if s in totals},
        details={
            s: SplitDetail(
                error_acc=_num(point[s]["error_acc"]),
                correct_acc=_num(point[s]["correct_acc"]),
                erroneous=int(totals[s][0]),
                correct=int(totals[s][2]),
            )
            for s in SPLITS
            if s in point
        },
        ci=Intervals(
            splits={s: S.interval(reps[s]) for s in SPLITS if s in reps},
            average_f1=S.interval(reps["average_f1"]),
        ),
    )
    if undefined := undefined_reasons(summary.details, summary.splits):
        summary.undefined = undefined
    undecided = int((predicted == -2).sum())
    if undecided:
        summary.undecided = Undecided(solutions=undecided,
                                      why="scores stop before any step is scored below the threshold (an input cut "
                                          "at the length limit, or a critique that named no paragraph of the "
                                          "solution): no prediction, counted as a miss")  # fmt: skip
    return summary
