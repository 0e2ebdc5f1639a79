"""Your own preference data's per-sample line: RewardBench's one-pair line naming its benchmark,
`{"benchmark": "pairwise", "id", "subset", "score_chosen": x, "score_rejected": y}` (a pairwise judge:
`"results"`, its credit, instead of the scores). The `benchmark` key keeps these lines apart from RewardBench's,
whose layout they share; any subset name is allowed."""

from __future__ import annotations

from typing import Any

from ..errors import DataError
from ..examples import Example, PromptScores
from . import rewardbench

NAME = "pairwise"


def line(example: Example, scores: PromptScores, name: str = NAME) -> dict[str, Any]:
    return {"benchmark": name, **rewardbench.line(example, scores)}


def read(rec: dict[str, Any], where: str, index: int, domain: str | None, name: str = NAME) -> PromptScores | None:
    """A one-pair record naming benchmark `name` (pairwise, JudgeBench), or None when the record is not one."""
    if rec.get("benchmark") != name:
        return None
    pair = rewardbench.pair_scores(rec, where)
    if pair is None:
        raise DataError(f"{where}: no 'score_chosen' / 'score_rejected' and no 'results'")
    subset = rec.get("subset")
    if not isinstance(subset, str) or not subset:
        raise DataError(f"{where}: 'subset' must be a non-empty string")
    return PromptScores(str(rec.get("id", index)), subset, pair[0], pair[1], pair[2])
