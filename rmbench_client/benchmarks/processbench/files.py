"""ProcessBench's per-sample line, written and read back (`rmbench-client score`):

    {"benchmark": "processbench", "id", "split", "label", "num_steps", "step_scores": [...]}

`step_scores` holds one score per step scored (fewer than the steps when the input was cut at the length limit);
`label` is ProcessBench's own (the earliest wrong step's index, -1 for none). Which step is predicted wrong depends
on the threshold, so it is not written here: `score` recomputes it (`--threshold`).
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.lines import text_field
from ..shared.steps import count_field, step_scores
from .data import earliest_wrong, labels_of


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    return {"benchmark": "processbench", "id": example.id, "split": example.group,
            "label": earliest_wrong(example.step_labels), "num_steps": len(example.steps),
            "step_scores": list(scores.steps or ())}  # fmt: skip


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    if rec.get("benchmark") != "processbench":
        return None
    rid, split = text_field(rec, "id", where), text_field(rec, "split", where)
    steps = count_field(rec.get("num_steps"), where, "num_steps", 1)
    label = count_field(rec.get("label"), where, "label", -1)
    if label >= steps:
        raise DataError(f"{where}: label {label} is no step of its {steps}")
    scores = step_scores(rec, where)
    if len(scores) > steps:
        raise DataError(f"{where}: {len(scores)} step scores for {steps} steps")
    return PromptScores(rid, split, (), (), steps=scores, step_labels=labels_of(label, steps))
