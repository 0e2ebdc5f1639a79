"""PPE Preference's per-sample line, in the fields of PPE's own rows and results (`score_1`, `score_2`: the rewards
of `response_1`, model_a's answer, and `response_2`, model_b's), plus `"benchmark"`:
{"benchmark": "ppe-preference", "question_id", "group", "winner", "score_1", "score_2", "credit"}; a judge: `"results"`
(its credit of the battle) instead of the rewards.
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.lines import credit_value, floats, text_field
from .scoring import credits

NAME = "ppe-preference"


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    winner = example.extra.get("winner", "model_a")
    rec: dict[str, Any] = {"benchmark": NAME, "question_id": example.id, "group": example.group,
                           "winner": winner}  # fmt: skip
    if scores.results is not None:
        rec["results"] = list(scores.results)
    else:
        first, second = (scores.chosen, scores.rejected) if winner == "model_a" else (scores.rejected, scores.chosen)
        rec |= {"score_1": first[0], "score_2": second[0]}
    return rec | {"credit": float(credits([scores])[0])}


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    if rec.get("benchmark") != NAME:
        return None
    rid, group, winner = (text_field(rec, k, where) for k in ("question_id", "group", "winner"))
    if winner not in ("model_a", "model_b"):
        raise DataError(f"{where}: winner {winner!r} is neither 'model_a' nor 'model_b'")
    if rec.get("results") is not None:
        return PromptScores(rid, group, (), (), credit_value(rec["results"], where))
    first, second = (floats(rec.get(k), where, k) for k in ("score_1", "score_2"))
    chosen, rejected = (first, second) if winner == "model_a" else (second, first)
    return PromptScores(rid, group, chosen, rejected)
