"""PPE Correctness's per-sample line, in the fields of PPE's own rows and results (`score_<i>`: the reward of
`response_<i>`), plus `"benchmark"`: {"benchmark": "ppe-correctness", "set", "question_id", "model_name", "scores"
(each answer's correctness, as the hub's rows hold it), "sampled_conflict_pairs" (as [correct, incorrect] answer
indices), "score_1" ... "score_K", "accuracy" (the row's mean pair credit)}; a judge: `"results"` (its credit per
sampled pair) instead of the rewards.
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.credits import pair_credits
from ..shared.lines import credit_value, floats, text_field
from .data import positions

NAME = "ppe-correctness"


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    kept = example.extra.get("labels")  # each answer's correctness, in the row's order
    labels = (
        [bool(v) for v in kept]
        if isinstance(kept, list)
        else [True] * len(example.chosen) + [False] * len(example.rejected)
    )
    index = {True: [i for i, v in enumerate(labels) if v], False: [i for i, v in enumerate(labels) if not v]}
    pairs = [[index[True][c], index[False][r]] for c, r in example.comparisons()]
    rec: dict[str, Any] = {"benchmark": NAME, "set": example.group,
                           "question_id": example.extra.get("question_id", example.id),
                           "model_name": example.extra.get("model_name"), "scores": labels,
                           "sampled_conflict_pairs": pairs}  # fmt: skip
    if scores.results is not None:
        rec["results"] = list(scores.results)
    else:
        position = {True: iter(scores.chosen), False: iter(scores.rejected)}
        rec |= {f"score_{i + 1}": next(position[v]) for i, v in enumerate(labels)}
    credit = pair_credits(scores)
    return rec | {"accuracy": float(credit.mean()) if credit.size else None}


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    if rec.get("benchmark") != NAME:
        return None
    group, question = text_field(rec, "set", where), text_field(rec, "question_id", where)
    labels = rec.get("scores")
    if not isinstance(labels, list) or not labels or not all(isinstance(v, bool) for v in labels):
        raise DataError(f"{where}: 'scores' must be a non-empty list of booleans (each answer's correctness)")
    position = positions(labels)
    pairs = []
    for n, pair in enumerate(rec.get("sampled_conflict_pairs") or []):
        ok = (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(i, int) and 0 <= i < len(labels) for i in pair)
        )
        if not ok or not labels[pair[0]] or labels[pair[1]]:
            raise DataError(f"{where}: 'sampled_conflict_pairs[{n}]' must be [a correct, an incorrect] answer index")
        pairs.append((position[pair[0]], position[pair[1]]))
    model = rec.get("model_name")
    rid = f"{group}:{question}" + (f":{model}" if model else "")
    if rec.get("results") is not None:
        return PromptScores(rid, group, (), (), credit_value(rec["results"], where), pairs=tuple(pairs))
    rewards = [floats(rec.get(f"score_{i + 1}"), where, f"score_{i + 1}")[0] for i in range(len(labels))]
    chosen = tuple(r for r, v in zip(rewards, labels, strict=True) if v)
    rejected = tuple(r for r, v in zip(rewards, labels, strict=True) if not v)
    return PromptScores(rid, group, chosen, rejected, pairs=tuple(pairs))
