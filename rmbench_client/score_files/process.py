"""The per-sample lines of the process benchmarks, written and read back (`rmbench-client score`):

    PRMBench:     {"benchmark": "prmbench", "id", "classification", "step_scores": [...], "step_labels": [...]}
    ProcessBench: {"benchmark": "processbench", "id", "split", "label", "num_steps", "step_scores": [...]}

`step_scores` holds one score per step scored (fewer than the steps when the input was cut at the length limit);
PRMBench's `step_labels` are 1 for a correct step and 0 for an erroneous one; ProcessBench's `label` is its own (the
earliest wrong step's index, -1 for none). Which steps were judged wrong depends on the threshold, so it is not
written here: `score` recomputes it (`--threshold`).
"""

from __future__ import annotations

from typing import Any

from ..datasets.processbench import earliest_wrong, labels_of
from ..errors import DataError
from ..examples import Example, PromptScores
from .common import floats, text_field


def _step_scores(rec: dict[str, Any], where: str) -> tuple[float, ...]:
    value = rec.get("step_scores")
    if not isinstance(value, list):
        raise DataError(f"{where}: 'step_scores' must be a list of numbers")
    return floats(value, where, "step_scores") if value else ()


def _count(value: Any, where: str, key: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise DataError(f"{where}: '{key}' must be an integer >= {low}")
    return value


def prmbench_line(example: Example, scores: PromptScores) -> dict[str, Any]:
    return {"benchmark": "prmbench", "id": example.id, "classification": example.group,
            "step_scores": list(scores.steps or ()), "step_labels": list(example.step_labels)}  # fmt: skip


def prmbench_read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    if rec.get("benchmark") != "prmbench":
        return None
    rid, group = text_field(rec, "id", where), text_field(rec, "classification", where)
    labels = rec.get("step_labels")
    if not isinstance(labels, list) or not labels or any(v not in (0, 1) or isinstance(v, bool) for v in labels):
        raise DataError(f"{where}: 'step_labels' must be a non-empty list of 1 (correct) and 0 (erroneous)")
    scores = _step_scores(rec, where)
    if len(scores) > len(labels):
        raise DataError(f"{where}: {len(scores)} step scores for {len(labels)} steps")
    return PromptScores(rid, group, (), (), steps=scores, step_labels=tuple(labels))


def processbench_line(example: Example, scores: PromptScores) -> dict[str, Any]:
    return {"benchmark": "processbench", "id": example.id, "split": example.group,
            "label": earliest_wrong(example.step_labels), "num_steps": len(example.steps),
            "step_scores": list(scores.steps or ())}  # fmt: skip


def processbench_read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    if rec.get("benchmark") != "processbench":
        return None
    rid, split = text_field(rec, "id", where), text_field(rec, "split", where)
    steps = _count(rec.get("num_steps"), where, "num_steps", 1)
    label = _count(rec.get("label"), where, "label", -1)
    if label >= steps:
        raise DataError(f"{where}: label {label} is no step of its {steps}")
    scores = _step_scores(rec, where)
    if len(scores) > steps:
        raise DataError(f"{where}: {len(scores)} step scores for {steps} steps")
    return PromptScores(rid, split, (), (), steps=scores, step_labels=labels_of(label, steps))
