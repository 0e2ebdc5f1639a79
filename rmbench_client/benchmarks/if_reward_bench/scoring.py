"""IF-RewardBench, as its own code scores a ranking (thu-coai/IF-RewardBench at c192fe9, `metrics/
analysis_constraint_assessment.py`'s `calculate_pairwise_metrics` from one score per response, and the groupings
and overall figure of it and `analysis_overall_assessment.py`).

Per instruction, its responses' scores s and its preference graph's edges (u better than v), each edge once:
    C = #{s_u > s_v}   D = #{s_u < s_v}   T = #{s_u = s_v}          a tie is wrong
    accuracy_i = C / max(|E|, 1)
    tau_i      = (C - D) / max(1, sqrt((C + D) (C + D + T)))        its "Kendall Taub": tau-b with the graph's pairs
                                                                     untied, ties only in the scores
(an instruction without an edge counts 0 in both, as upstream's max(..., 1) makes it).
Per group (instruction type; and the responding model's size, the turn, the checklist's length bucket, as it
prints them): the mean of the instructions' figures (numpy's mean, in data order).
overall = the mean of the three instruction types' figures (Single_Turn, Multi_Turn, System_Prompt).
Intervals: each instruction type's instructions resampled independently, combined exactly as the point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from msgspec import UnsetType

from ...errors import DataError
from ...examples import PromptScores
from ..kinds.ranking import counts
from ..shared import bootstrap
from ..shared.step_aggregates import plain_sum
from ..spec import Interval, Lengths, Records, Samples
from .constants import MODEL_TYPES, NAME, TYPES, UNKNOWN_MODEL_TYPE
from .summary import Figures, IfIntervals, IfRewardBenchSummary

SUMMARY = IfRewardBenchSummary
NAMES = ("accuracy", "tau")


def instruction(rec: PromptScores) -> tuple[float, float]:
    """(accuracy, tau) of one instruction."""
    c, d, e, scores = counts(rec)
    ties = e - c - d
    return c / max(e, 1), (c - d) / max(1, math.sqrt((c + d) * (c + d + ties)))


def model_type(model: str) -> str:
    return next((size for size, models in MODEL_TYPES.items() if model in models), UNKNOWN_MODEL_TYPE)


def constraint_bucket(n: int) -> str:
    return "<=3" if n <= 3 else str(n) if n < 7 else ">=7"


def facet(rec: PromptScores, name: str) -> str:
    found = dict(rec.facets).get(name)
    if found is None:
        raise DataError(f"prompt {rec.id}: no {name!r} (an IF-RewardBench line names it)")
    return found


GROUPINGS: dict[str, Callable[[PromptScores], str]] = {
    "model_types": lambda r: model_type(facet(r, "response_generation_model")),
    "turns": lambda r: facet(r, "turn"),
    "constraint_counts": lambda r: constraint_bucket(int(facet(r, "constraints"))),
}


def _sort_key(key: str) -> tuple[int, float | str]:
    """Its scripts' order of a breakdown's keys: numbers first, by value."""
    return (0, float(key)) if key.replace(".", "", 1).isdigit() else (1, key)


def means(
    records: Sequence[PromptScores], values: np.ndarray, key: Callable[[PromptScores], str]
) -> dict[str, Figures]:
    """Each group's mean figures (numpy's mean over its instructions, in record order), groups in upstream's order."""
    rows: dict[str, list[int]] = {}
    for k, rec in enumerate(records):
        rows.setdefault(key(rec), []).append(k)
    return {
        g: {f: float(np.mean(values[rows[g], j])) for j, f in enumerate(NAMES)} for g in sorted(rows, key=_sort_key)
    }


def overall(types: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The mean of the instruction types' figures (those scored, in their order), summed one after another (floats,
    or arrays of replicates alike)."""
    present = [types[t] for t in TYPES if t in types]
    return {f: plain_sum([t[f] for t in present]) / len(present) for f in NAMES}


def prompt_values(records: Sequence[PromptScores]) -> np.ndarray:
    """(n, 2) per instruction: accuracy and tau; their means over an instruction type are its figures."""
    return np.asarray([instruction(r) for r in records], dtype=np.float64).reshape(len(records), 2)


def score(
    records: Records, seed: int = 0, samples: Samples = None, lengths: Lengths | None = None
) -> IfRewardBenchSummary:
    """Summary: the figures per instruction type and overall (with 95% intervals), and the breakdowns."""
    summary = IfRewardBenchSummary(benchmark=NAME)
    if not records:
        return summary
    values = prompt_values(records)
    summary.instruction_types = means(records, values, lambda r: r.group)
    summary.n = {t: sum(r.group == t for r in records) for t in summary.instruction_types}
    summary.overall = overall(summary.instruction_types)
    for name, key in GROUPINGS.items():
        setattr(summary, name, means(records, values, key))
    rng = bootstrap.rng(seed)
    kwargs = {} if samples is None else {"samples": samples}
    reps = {t: bootstrap.replicate_means(values[[r.group == t for r in records]], rng, **kwargs)
            for t in summary.instruction_types}  # fmt: skip
    per_type = {t: {f: r[:, j] for j, f in enumerate(NAMES)} for t, r in reps.items()}
    summary.ci = IfIntervals(
        instruction_types={t: {f: bootstrap.interval(v) for f, v in figs.items()} for t, figs in per_type.items()},
        overall={f: bootstrap.interval(v) for f, v in overall(per_type).items()},
    )
    return summary


def headline_numbers(means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """compare's columns from the instruction types' mean figures (..., 2), as `score` computes them."""
    types = {t: {f: means[t][..., j] for j, f in enumerate(NAMES)} for t in means}
    whole = overall(types)
    return {t: figs["accuracy"] for t, figs in types.items()} | {"tau": whole["tau"], "accuracy": whole["accuracy"]}


def headline(summary: IfRewardBenchSummary) -> list[tuple[str, float | None]]:
    """compare's columns: each instruction type's accuracy, then the overall tau and accuracy (which leads)."""
    whole = {} if isinstance(summary.overall, UnsetType) else summary.overall
    types = [(t, figs["accuracy"]) for t, figs in summary.instruction_types.items()]
    return [*types, ("tau", whole.get("tau")), ("accuracy", whole.get("accuracy"))]


def headline_intervals(summary: IfRewardBenchSummary) -> dict[str, Interval]:
    ci = summary.ci
    if isinstance(ci, UnsetType):
        return {}
    return {t: figs["accuracy"] for t, figs in ci.instruction_types.items()} | dict(ci.overall)


def scored_groups(summary: IfRewardBenchSummary) -> list[str]:
    return list(summary.instruction_types)
