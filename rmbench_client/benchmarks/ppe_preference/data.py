"""PPE Preference (hub `lmarena-ai/PPE-Human-Preference-V1`, split `test`): Chatbot Arena battles, as the hub's
records hold them: `question_id`, `model_a`, `model_b`, `winner`, `prompt`, `response_1` (model_a's answer),
`response_2` (model_b's), `language`, the prompt flags `hard_prompt`, `easy_prompt`, `if_prompt`, `math_prompt`
and `is_code` (booleans), `conv_metadata` and `sim` (PPE's battle categories `shorter_won` and `similar_response`
are read from them: constants.PPE_BATTLE_TAGS), and metadata this loader does not read (`category_tag`,
`length_a`, `length_b`, `token_diff`, `longer_won`, `is_refusal`).

The chosen response is the winner's. A human tie (`winner` other than `model_a` / `model_b`: "tie",
"tie (bothbad)") has no correct answer: it is not scored (`None`), as PPE's accuracy counts decisive votes only.
The id is the `question_id`. Responses are scored as they are, blank ones too. The group is the record's place in
PPE's categories — its language bucket, the flags and battle tags it has, e.g. `english/hard_prompt+shorter_won` —
so that every category's accuracy is a function of the groups' (scoring/ppe_preference.py); the prompt is one user
turn, as PPE scores it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files
from .constants import FLAGS, LANGUAGES, OTHER_LANGUAGE, SIMILAR_RESPONSE_SIM

REQUIRED = ("question_id", "winner", "prompt", "response_1", "response_2")
WINNERS = {"model_a": ("response_1", "response_2"), "model_b": ("response_2", "response_1")}
KEPT = ("model_a", "model_b", "winner", "language")


def group_of(language: str, flags: list[str]) -> str:
    """'<language bucket>' or '<language bucket>/<flag>+<flag>' (flags in PPE_FLAGS order, then battle tags)."""
    bucket = LANGUAGES.get(language, OTHER_LANGUAGE)
    return bucket + ("/" + "+".join(flags) if flags else "")


def parse_record(record: Any, path: Path, index: int) -> Example | None:
    """One validated decisive battle, None for a human tie, or a DataError naming file and record."""
    record, where = check.record(record, path, index, REQUIRED)
    winner = record["winner"]
    if not isinstance(winner, str):
        raise DataError(f"{where}: 'winner' must be a string, got {type(winner).__name__}")
    if winner not in WINNERS:
        if winner.startswith("tie"):
            return None
        raise DataError(f"{where}: winner {winner!r} is none of 'model_a', 'model_b', 'tie', 'tie (bothbad)'")
    flags = []
    for flag in FLAGS:
        value = record.get(flag)
        if value is not None and not isinstance(value, bool):
            raise DataError(f"{where}: '{flag}' must be a boolean, got {type(value).__name__}")
        if value:
            flags.append(flag)
    flags += battle_tags(record, winner, where)
    language = record.get("language")
    if language is not None and not isinstance(language, str):
        raise DataError(f"{where}: 'language' must be a string, got {type(language).__name__}")
    better, worse = WINNERS[winner]
    return Example(
        id=check.ident(record["question_id"], where, "question_id"),
        benchmark="ppe-preference",
        group=group_of(language or "", flags),
        prompt=check.prompt(record["prompt"], where),
        chosen=(check.string(record[better], where, better),),
        rejected=(check.string(record[worse], where, worse),),
        extra={k: record[k] for k in KEPT if k in record},
    )


def battle_tags(record: dict[str, Any], winner: str, where: str) -> list[str]:
    """`shorter_won` when the winner's answer has fewer tokens than the loser's (by the hub's conv_metadata),
    `similar_response` when the hub's `sim` of the two answers is at least PPE_SIMILAR_RESPONSE_SIM."""
    tags = []
    meta = record.get("conv_metadata")
    found = [meta.get(f"sum_assistant_{side}_tokens") for side in "ab"] if isinstance(meta, dict) else []
    tokens = [t for t in found if isinstance(t, int) and not isinstance(t, bool)]
    if len(tokens) == 2:
        winner_tokens, loser_tokens = tokens if winner == "model_a" else tokens[::-1]
        if winner_tokens < loser_tokens:
            tags.append("shorter_won")
    sim = record.get("sim")
    if sim is not None and (isinstance(sim, bool) or not isinstance(sim, int | float)):
        raise DataError(f"{where}: 'sim' must be a number, got {type(sim).__name__}")
    if sim is not None and sim >= SIMILAR_RESPONSE_SIM:
        tags.append("similar_response")
    return tags


files_in = data_files
