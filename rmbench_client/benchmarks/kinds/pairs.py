"""The pairs kind: one chosen-rejected pair per prompt in named groups (your own pairs, JudgeBench, a plug-in's;
RewardBench's line). Accuracy as RewardBench counts a pair, the per-sample line and its reader, the table.

correct_p      = [ chosen_p > rejected_p ]             strict: a tie counts as wrong (a judge: its credit)
acc_s          = mean of correct_p over the prompts of subset s
accuracy       = mean of correct_p over every prompt    (prompt-weighted)
macro_accuracy = mean of acc_s over the subsets         (every subset weighs the same)
Intervals: subsets resampled independently, each replicate combined exactly as the point estimate.
"style_bias" (given response lengths): the rank correlation of score and length (style_bias.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared import bootstrap, style_bias
from ..shared.credits import outcomes
from ..shared.formatting import percent
from ..shared.lines import credit_value, floats
from ..shared.style_bias import StyleBias
from ..shared.tables import cell_of, known, subset_rows
from ..spec import Interval, Lengths, Records, Row, Samples, Summary

if TYPE_CHECKING:  # rich is imported where a table is drawn
    from rich.table import Table


class PairIntervals(msgspec.Struct, kw_only=True):
    """The 95% intervals of a one-pair summary; no macro average's where no subset was scored."""

    subsets: dict[str, Interval]
    accuracy: Interval
    macro_accuracy: Interval | UnsetType = UNSET


class PairSummary(Summary, kw_only=True):
    """A one-pair benchmark's summary (your own pairs, JudgeBench: `benchmark` names which). The numbers are unset
    only in the summary of a run that scored nothing (`{"benchmark": ...}` alone); NaN when scoring no prompt."""

    subsets: dict[str, float] = msgspec.field(default_factory=dict)
    n: dict[str, int] = msgspec.field(default_factory=dict)
    accuracy: float | UnsetType = UNSET
    macro_accuracy: float | UnsetType = UNSET
    ci: PairIntervals | UnsetType = UNSET
    style_bias: StyleBias | UnsetType = UNSET


SUMMARY = PairSummary


def score(
    records: Records,
    seed: int = 0,
    samples: Samples = None,
    lengths: Lengths | None = None,
    *,
    benchmark: str = "pairwise",
) -> PairSummary:
    """Summary: per-subset accuracy with n, prompt-weighted and macro accuracy, and 95% intervals for each."""
    correct, reps = bootstrap.pair_accuracies(records, seed, samples)
    n = {name: len(c) for name, c in correct.items()}
    subsets = {name: float(c.mean()) for name, c in correct.items()}
    summary = PairSummary(benchmark=benchmark, subsets=subsets, n=n)
    if not correct:
        summary.accuracy = summary.macro_accuracy = math.nan
        summary.ci = PairIntervals(subsets={}, accuracy=[math.nan, math.nan])
        return summary
    total = sum(n.values())
    summary.accuracy = float(np.concatenate(list(correct.values())).mean())
    summary.macro_accuracy = float(np.mean(list(subsets.values())))
    pooled = sum(reps[name] * (n[name] / total) for name in reps)
    summary.ci = PairIntervals(
        subsets={name: bootstrap.interval(r) for name, r in reps.items()},
        accuracy=bootstrap.interval(np.asarray(pooled)),
        macro_accuracy=bootstrap.interval(np.mean(np.stack(list(reps.values())), axis=0)),
    )
    bias = style_bias.diagnose(records, 1, (), lengths, seed, samples)
    if bias is not None:
        summary.style_bias = bias
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


def headline_intervals(summary: PairSummary) -> dict[str, Interval]:
    """The summary's 95% intervals of the same numbers."""
    ci = summary.ci
    if isinstance(ci, UnsetType):
        return {}
    named = {"accuracy": ci.accuracy, "macro": ci.macro_accuracy}
    return dict(ci.subsets) | {name: v for name, v in named.items() if not isinstance(v, UnsetType)}


# --- the per-sample line: RewardBench's, with the benchmark named where the layout alone cannot tell ---------

SCORE_KEYS = (("scores_chosen", "scores_rejected"), ("score_chosen", "score_rejected"))


def line(example: Example, scores: PromptScores, group_field: str = "subset") -> dict[str, Any]:
    """A one-pair prompt's line (RewardBench's own): one score a side, or the judge's credit."""
    rec: dict[str, Any] = {"id": example.id, group_field: example.group}
    if scores.results is not None:
        rec["results"] = scores.results[0]
    else:
        rec |= {"score_chosen": scores.chosen[0], "score_rejected": scores.rejected[0]}
    return rec


def pair_scores(
    rec: dict[str, Any], where: str
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...] | None] | None:
    """(chosen, rejected, results) of a one-pair record (either spelling of the score keys), None if none."""
    for keys in SCORE_KEYS:
        if keys[0] in rec or keys[1] in rec:
            missing = [k for k in keys if k not in rec]
            if missing:
                raise DataError(f"{where}: missing key '{missing[0]}'")
            chosen, rejected = (floats(rec[k], where, k) for k in keys)
            if len(chosen) != 1 or len(rejected) != 1:
                raise DataError(f"{where}: expected one chosen and one rejected score")
            return chosen, rejected, None
    if rec.get("results") is not None:
        results = credit_value(rec["results"], where)
        if len(results) != 1:
            raise DataError(f"{where}: 'results' must be one credit")
        return (), (), results
    return None


def is_pair(rec: dict[str, Any]) -> bool:
    for keys in SCORE_KEYS:
        for k in keys:
            if k in rec:
                v = rec[k]
                return not isinstance(v, list) or len(v) == 1
    v = rec.get("results")
    return v is not None and (not isinstance(v, list) or (len(v) == 1 and not isinstance(v[0], list)))


@dataclass(frozen=True)
class Lines:
    """A benchmark of this kind's line, naming it (`score` tells the layouts apart by it), and its reader."""

    benchmark: str
    group_field: str = "subset"

    def line(self, example: Example, scores: PromptScores) -> dict[str, Any]:
        return {"benchmark": self.benchmark, **line(example, scores, self.group_field)}

    def read(self, rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
        """The scores of a line this benchmark wrote; None for a record of another."""
        if rec.get("benchmark") != self.benchmark:
            return None
        pair = pair_scores(rec, where)
        if pair is None:
            raise DataError(f"{where}: no 'score_chosen' / 'score_rejected' and no 'results'")
        group = rec.get(self.group_field)
        if not isinstance(group, str) or not group:
            raise DataError(f"{where}: '{self.group_field}' must be a non-empty string")
        return PromptScores(str(rec.get("id", index)), group, pair[0], pair[1], pair[2])


# --- the table ----------------------------------------------------------------------------------------------


def rows(summary: PairSummary) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per subset, then the prompt-weighted accuracy and the macro average."""
    ci = known(summary.ci)
    n = summary.n
    rows: list[Row] = [
        {"name": name, "values": [cell_of(acc, ci.subsets.get(name) if ci else None)], "n": n.get(name), "total": False}
        for name, acc in summary.subsets.items()
    ]
    totals = (
        ("accuracy", summary.accuracy, ci.accuracy if ci else None, sum(n.values())),
        ("macro average", summary.macro_accuracy, known(ci.macro_accuracy) if ci else None, None),
    )
    for name, value, interval, count in totals:
        if not isinstance(value, UnsetType):
            rows.append({"name": name, "values": [cell_of(value, interval)], "n": count, "total": True})
    return ["accuracy"], rows


def table(summary: PairSummary, title: str) -> Table:
    """Subset accuracies, the prompt-weighted accuracy and the subsets' macro average."""
    from rich.table import Table

    drawn = Table(title=title)
    ci = known(summary.ci)
    subset_rows(drawn, summary.subsets, ci.subsets if ci else {}, summary.n)
    n = sum(summary.n.values())
    accuracy, macro = known(summary.accuracy), known(summary.macro_accuracy)
    drawn.add_row("[bold]accuracy[/bold]", percent(accuracy, ci.accuracy if ci else None), str(n))
    drawn.add_row("[bold]macro average[/bold]", percent(macro, known(ci.macro_accuracy) if ci else None), "")
    return drawn


def headline(summary: PairSummary) -> list[tuple[str, float | None]]:
    """compare's columns: each subset, the prompt-weighted accuracy, then the macro average."""
    tail = [("accuracy", known(summary.accuracy)), ("macro", known(summary.macro_accuracy))]
    return [(name, value) for name, value in summary.subsets.items()] + tail


def scored_groups(summary: PairSummary) -> list[str]:
    return list(summary.subsets)
