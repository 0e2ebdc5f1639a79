"""IF-RewardBench's data (`data/if_rewardbench.json` of thu-coai/IF-RewardBench at c192fe9; its README's fields): a
JSON list of instructions, each `id`, `response_generation_model`, `instruction_type`, `messages` (the system
prompt and conversation history ending with the instruction), `checklist`, `constraint_type`, `responses` (each
`response_id`, `response`, its checklist `labels`) and `preference_graph` (each edge `{"chosen": {"response_id"},
"rejected": {"response_id"}}`). An example holds the responses in `chosen` (by response_id) and the graph's edges in
`pairs` (better, worse), an edge given twice once (as its `analysis_constraint_assessment.py` takes a set of them);
its facets are what the breakdowns need: the responding model, the turn (`get_turn`: the turns but the system
prompt, (messages + 1) // 2, at most 5) and the checklist's length.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files
from .constants import MAX_TURN, NAME, TYPES


def turn(messages: list[Any]) -> int:
    """The instruction's turn, as its metrics scripts count it."""
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        messages = messages[1:]
    return min((len(messages) + 1) // 2, MAX_TURN)


def _responses(value: Any, where: str) -> tuple[list[str], dict[Any, int]]:
    """The responses' texts, and each response_id's position among them."""
    if not isinstance(value, list) or not value:
        raise DataError(f"{where}: 'responses' must be a non-empty list of responses")
    texts, position = [], {}
    for k, resp in enumerate(value):
        at = f"responses[{k}]"
        if not isinstance(resp, dict) or "response_id" not in resp or "response" not in resp:
            raise DataError(f"{where}: '{at}' must be an object with response_id and response")
        rid = resp["response_id"]
        if isinstance(rid, bool) or not isinstance(rid, int | str) or rid in position:
            raise DataError(f"{where}: '{at}.response_id' must be an id no other response has")
        position[rid] = k
        texts.append(check.string(resp["response"], where, f"{at}.response"))
    return texts, position


def _edges(value: Any, position: dict[Any, int], where: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, list):
        raise DataError(f"{where}: 'preference_graph' must be a list of edges")
    edges: dict[tuple[int, int], None] = {}
    for k, edge in enumerate(value):
        try:
            pair = (position[edge["chosen"]["response_id"]], position[edge["rejected"]["response_id"]])
        except (KeyError, TypeError):
            raise DataError(f"{where}: 'preference_graph[{k}]' must hold chosen and rejected response_ids of its "
                            "responses") from None  # fmt: skip
        edges[pair] = None
    return tuple(edges)


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One instruction, its responses and its preference graph; a DataError naming the file and record."""
    record, where = check.record(
        record,
        path,
        index,
        (
            "id",
            "response_generation_model",
            "instruction_type",
            "messages",
            "checklist",
            "responses",
            "preference_graph",
        ),
    )
    texts, position = _responses(record["responses"], where)
    if not isinstance(record["checklist"], list):
        raise DataError(f"{where}: 'checklist' must be a list")
    model = check.string(record["response_generation_model"], where, "response_generation_model")
    return Example(
        id=check.ident(record["id"], where),
        benchmark=NAME,
        group=check.choice(record["instruction_type"], where, "instruction_type", TYPES),
        prompt=check.prompt(record["messages"], where, "messages"),
        chosen=tuple(texts),
        rejected=(),
        pairs=_edges(record["preference_graph"], position, where),
        facets=(
            ("response_generation_model", model),
            ("turn", str(turn(record["messages"]))),
            ("constraints", str(len(record["checklist"]))),
        ),  # fmt: skip
    )


files_in = data_files
