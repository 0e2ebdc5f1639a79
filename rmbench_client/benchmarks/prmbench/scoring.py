"""PRMBench, as its authors score it (ssmisya/PRMBench, commit a1ae4eab803e14c4c6316bf89d1679b0486faa8c):
`mr_eval/tasks/prmtest_classified/task.py` (`evaluate_function`, `eval_on_hallucination_step`) for the counts,
`mr_visualize/eval_res_view/draw_tabs/form_latex_strs.ipynb` (`get_prmscore_from_current_res_dict`,
`get_avg_prmscore_from_current_res_dict`) for the leaderboard's numbers.

A step is judged correct when its score is strictly above the threshold (`prm.threshold`, 0.5: mr_eval's
`validity_threshold`; a score equal to it is judged erroneous). Over a set of steps, with "correct" the positive:
    TP = correct steps judged correct     FN = correct steps judged erroneous
    FP = erroneous steps judged correct   TN = erroneous steps judged erroneous
    F1 = F1 of (TP, FP, FN); negative F1 = F1 of (TN, FN, FP)   (upstream's -1 where a precision, recall or their
                                                               sum has a zero denominator, kept as it is)
    PRMScore = max(0, (F1 + negative F1) / 2); multi_solutions (no erroneous step): max(0, F1)
per error class over the pooled steps of its solutions; per group (Simplicity: NR, NCL; Soundness: ES, SC, DC, CI;
Sensitivity: PS, DR, MS) the plain mean of its classes' PRMScores; overall over every step pooled (not the mean of
the columns), as the leaderboard's first column.

What upstream does, and what is done here:
- steps past the end of the scores (an input cut at the length limit: mr_eval's collator cuts at 2,048 tokens, so a
  PRM scores only the steps before the cut): upstream counts only the steps a model scored; so does this module,
  and the summary counts the solutions and steps left out (`cut`);
- error steps past the end of a step list and repeated ids: handled by the loader (datasets/prmbench.py) as
  upstream's loader does, and stated in the summary;
- more scores than steps: upstream would count the extra ones as correct steps; here it is an error naming the
  solution (a process model kind never returns one).
Upstream reads ReasonEval's separate redundancy labels for NR and NCL where a model gives them; the model kinds
here give one score per step, which upstream reads as every other PRM's validity labels.
Intervals: solutions resampled within each class, 1,000 replicates, every number recomputed from the summed counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ... import constants as C
from ...errors import DataError
from ...examples import PromptScores
from ..shared import steps as S
from ..spec import Interval, Lengths, Records, Samples
from .constants import CLASSES, CORRECT_ONLY, GROUPS
from .summary import ClassDetail, Counts, Cut, Intervals, PRMBenchSummary

SUMMARY = PRMBenchSummary  # what `score` returns

GROUPS = GROUPS
COUNTS = ("TP", "FP", "TN", "FN")


def step_counts(records: Sequence[PromptScores], threshold: float = C.PRM_THRESHOLD) -> tuple[np.ndarray, S.Flat]:
    """(n, 4) per solution: TP, FP, TN, FN over the steps it has scores for; and the flattened steps."""
    flat = S.flatten(records)
    over = np.flatnonzero(flat.scored > flat.labelled)
    if len(over):
        r = records[int(over[0])]
        raise DataError(f"prompt {r.id}: {len(r.steps or ())} step scores for {len(r.step_labels or ())} steps")
    starts = np.r_[0, np.cumsum(flat.labelled)[:-1]]
    at = np.arange(len(flat.scores)) - np.r_[0, np.cumsum(flat.scored)[:-1]][flat.owner]  # step index in solution
    labels = flat.labels[starts[flat.owner] + at]  # the label of every scored step
    judged = flat.scores > threshold
    kinds = np.select([labels == 1, labels == 0], [np.where(judged, 0, 3), np.where(judged, 1, 2)], -1)
    n = len(records)
    counts = np.bincount(flat.owner * 4 + kinds, minlength=4 * n).reshape(n, 4) if n else np.zeros((0, 4), np.int64)
    return counts, flat


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """Upstream's F1, with its -1 for a zero denominator (of precision, recall or their sum)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tp + fp != 0, tp / (tp + fp), -1.0)
        recall = np.where(tp + fn != 0, tp / (tp + fn), -1.0)
        total = precision + recall
        return np.where(total != 0, 2 * precision * recall / total, -1.0)


def f1_pair(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F1, negative F1) of (..., 4) counts TP, FP, TN, FN."""
    tp, fp, tn, fn = (counts[..., k] for k in range(4))
    return _f1(tp, fp, fn), _f1(tn, fn, fp)


def prm_score(counts: np.ndarray, correct_only: bool = False) -> np.ndarray:
    """PRMScore of (..., 4) counts, clipped at 0 as the leaderboard's notebook does."""
    f1, negative = f1_pair(counts)
    return np.maximum(f1 if correct_only else 0.5 * f1 + 0.5 * negative, 0.0)


def numbers(sums: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every class's PRMScore, the groups' means and the overall PRMScore from per-class (..., 4) count sums."""
    out = {c: prm_score(v, c == CORRECT_ONLY) for c, v in sums.items()}
    for group, members in GROUPS.items():
        present = [out[c] for c in members if c in sums]
        if present:
            out[group] = np.mean(present, axis=0)
    out["overall"] = prm_score(np.sum(list(sums.values()), axis=0))
    return out


def _class_row(total: np.ndarray, n: int) -> ClassDetail:
    tp, fp, tn, fn = (int(v) for v in total)
    f1, negative = f1_pair(total.astype(np.float64))
    return ClassDetail(
        n=n,
        steps=tp + fp + tn + fn,
        counts=Counts(TP=tp, FP=fp, TN=tn, FN=fn),
        f1=float(f1),  # upstream's -1 where undefined
        negative_f1=float(negative),
        correct_step_acc=tp / (tp + fn) if tp + fn else None,
        wrong_step_acc=tn / (tn + fp) if tn + fp else None,
    )


def _f1_why(tp: int, fp: int, fn: int, kind: str) -> str:
    """Why upstream's F1 of (tp, fp, fn) is -1 (`kind`: the positive class's steps)."""
    if tp + fn == 0:
        why = f"no {kind} step"
    elif tp + fp == 0:
        why = f"no step judged {kind}"
    else:
        why = f"no {kind} step judged {kind}: precision and recall are 0"
    return f"{why}; PRMScore counts it as -1, as upstream does"


def undefined_reasons(details: Mapping[str, ClassDetail]) -> dict[str, str]:
    """Why each class's F1 (upstream's -1) or step accuracy (None) is undefined, by `<class>/<field>`."""
    out: dict[str, str] = {}
    for c, d in details.items():
        tp, fp, tn, fn = d.counts.TP, d.counts.FP, d.counts.TN, d.counts.FN
        if d.f1 < 0:
            out[f"{c}/f1"] = _f1_why(tp, fp, fn, "correct")
        if d.negative_f1 < 0 and c != CORRECT_ONLY:  # multi_solutions has no erroneous step: no negative F1
            out[f"{c}/negative_f1"] = _f1_why(tn, fn, fp, "erroneous")
        if d.correct_step_acc is None:
            out[f"{c}/correct_step_acc"] = f"no correct step in {c}"
        if d.wrong_step_acc is None:
            out[f"{c}/wrong_step_acc"] = f"no erroneous step in {c}"
    return out


def score(
    records: Records,
    seed: int = 0,
    samples: Samples = None,
    lengths: Lengths | None = None,
    threshold: float = C.PRM_THRESHOLD,
) -> PRMBenchSummary:
    """Summary: PRMScore per class, group and overall with 95% intervals, each class's counts and F1s, and what was
    left out (steps past a cut)."""
    counts, flat = step_counts(records, threshold)
    groups = [r.group for r in records]
    unknown = sorted(set(groups) - set(CLASSES))
    if unknown:
        raise DataError(f"{unknown[0]!r} is no PRMBench classification ({', '.join(CLASSES)})")
    totals = S.sums(counts, groups)
    point = numbers({c: v.astype(np.float64) for c, v in totals.items()})
    reps = numbers(S.replicate_sums(counts, groups, seed, samples))
    sizes = {g: groups.count(g) for g in totals}
    cut = np.flatnonzero(flat.scored < flat.labelled)
    summary = PRMBenchSummary(
        benchmark="prmbench",
        threshold=threshold,
        classes={c: float(point[c]) for c in CLASSES if c in totals},
        groups={g: float(point[g]) for g in GROUPS if g in point},
        overall=float(point["overall"]),
        n=sizes,
        details={c: _class_row(totals[c], sizes[c]) for c in CLASSES if c in totals},
        steps_scored=int(counts.sum()),
        ci=Intervals(
            classes={c: S.bounds(reps[c]) for c in totals},
            groups={g: S.bounds(reps[g]) for g in GROUPS if g in reps},
            overall=S.bounds(reps["overall"]),
        ),
    )
    if undefined := undefined_reasons(summary.details):
        summary.undefined = undefined
    if len(cut):
        left = int((flat.labelled - flat.scored)[cut].sum())
        summary.cut = Cut(solutions=len(cut), steps=left,
                          why="scores stop before the last step (input cut at the length limit): the steps after "
                              "them are not counted, as PRMBench counts only the steps a model scored")  # fmt: skip
    return summary


def prompt_values(records: Sequence[PromptScores], threshold: float = C.PRM_THRESHOLD) -> np.ndarray:
    """(n, 4) per solution: its TP, FP, TN, FN (a class's mean times its size is the class's pooled counts)."""
    return step_counts(records, threshold)[0].astype(np.float64)


def headline_numbers(means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """compare's columns from the classes' mean counts: the three groups, then the overall PRMScore."""
    every = numbers(S.from_means(means, sizes))
    return {name: every[name] for name in (*GROUPS, "overall") if name in every}


def headline_intervals(summary: PRMBenchSummary) -> dict[str, Interval]:
    """The summary's 95% intervals of the same numbers."""
    return summary.ci.groups | {"overall": summary.ci.overall}


def headline(summary: PRMBenchSummary) -> list[tuple[str, float | None]]:
    """compare's columns: Simplicity, Soundness, Sensitivity, then the overall PRMScore."""
    return [(g, summary.groups.get(g)) for g in GROUPS] + [("overall", summary.overall)]


def scored_groups(summary: PRMBenchSummary) -> list[str]:
    """The error classes the summary scored."""
    return list(summary.classes)
