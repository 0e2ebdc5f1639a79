"""PRMBench's per-sample line, written and read back (`rmbench-client score`):

    {"benchmark": "prmbench", "id", "classification", "step_scores": [...], "step_labels": [...]}

`step_scores` holds one score per step scored (fewer than the steps when the input was cut at the length limit);
`step_labels` are 1 for a correct step and 0 for an erroneous one. Which steps were judged wrong depends on the
threshold, so it is not written here: `score` recomputes it (`--threshold`).
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.lines import text_field
from ..shared.steps import step_scores


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    return {"benchmark": "prmbench", "id": example.id, "classification": example.group,
            "step_scores": list(scores.steps or ()), "step_labels": list(example.step_labels)}  # fmt: skip


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    if rec.get("benchmark") != "prmbench":
        return None
    rid, group = text_field(rec, "id", where), text_field(rec, "classification", where)
    labels = rec.get("step_labels")
    if not isinstance(labels, list) or not labels or any(v not in (0, 1) or isinstance(v, bool) for v in labels):
        raise DataError(f"{where}: 'step_labels' must be a non-empty list of 1 (correct) and 0 (erroneous)")
    scores = step_scores(rec, where)
    if len(scores) > len(labels):
        raise DataError(f"{where}: {len(scores)} step scores for {len(labels)} steps")
    return PromptScores(rid, group, (), (), steps=scores, step_labels=tuple(labels))
