"""The per-step kind: each example is one solution's steps, each labelled correct (1) or erroneous (0), scored by a
process model (PRMBench; ProcessBench with a line of its own). Its line and reader; how a solution's step scores
become numbers is each benchmark's (PRMBench's PRMScore, ProcessBench's F1), as are its table's columns.

    {"benchmark", "id", <group field>, "step_scores": [...], "step_labels": [...]}

`step_scores` holds one score per step scored (fewer than the steps when the input was cut at the length limit).
Which steps are judged wrong depends on the threshold, so it is not written: `score` recomputes it (`--threshold`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.lines import text_field
from ..shared.steps import step_scores


@dataclass(frozen=True)
class Lines:
    """A benchmark of this kind's line, naming it, and its reader."""

    benchmark: str
    group_field: str

    def line(self, example: Example, scores: PromptScores) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "id": example.id, self.group_field: example.group,
                "step_scores": list(scores.steps or ()), "step_labels": list(example.step_labels)}  # fmt: skip

    def read(self, rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
        """The step scores and labels of a line this benchmark wrote; None for a record of another."""
        if rec.get("benchmark") != self.benchmark:
            return None
        rid, group = text_field(rec, "id", where), text_field(rec, self.group_field, where)
        labels = rec.get("step_labels")
        if not isinstance(labels, list) or not labels or any(v not in (0, 1) or isinstance(v, bool) for v in labels):
            raise DataError(f"{where}: 'step_labels' must be a non-empty list of 1 (correct) and 0 (erroneous)")
        scores = step_scores(rec, where)
        if len(scores) > len(labels):
            raise DataError(f"{where}: {len(scores)} step scores for {len(labels)} steps")
        return PromptScores(rid, group, (), (), steps=scores, step_labels=tuple(labels))
