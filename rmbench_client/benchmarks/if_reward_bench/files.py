"""IF-RewardBench's per-sample line: the ranking kind's (`scores`, one per response in response_id order; `pairs`,
the preference graph's edges as [better, worse] positions) with what its breakdowns need: `instruction_type`,
`response_generation_model`, `turn` and `constraints` (the checklist's length).

    {"benchmark": "if-reward-bench", "id", "instruction_type", "response_generation_model", "turn", "constraints",
     "scores": [...], "pairs": [[u, v], ...]}
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..kinds.ranking import Lines
from .constants import FACETS, NAME

_RANKING = Lines(NAME, "instruction_type")


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    rec = _RANKING.line(example, scores)
    pairs = rec.pop("pairs")
    return rec | dict(example.facets) | {"pairs": pairs}


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    """The scores, edges and facets of an IF-RewardBench line; None for a record of another benchmark."""
    scores = _RANKING.read(rec, where, index, domain)
    if scores is None:
        return None
    facets = []
    for name in FACETS:
        value = rec.get(name)
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            raise DataError(f"{where}: '{name}' must be a string or an integer")
        facets.append((name, str(value)))
    return PromptScores(scores.id, scores.group, scores.chosen, (), pairs=scores.pairs, facets=tuple(facets))
