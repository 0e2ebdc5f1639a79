"""RMB (`Zhou-Zoey/RMB-Reward-Model-Benchmark`, `RMB_dataset/`): one JSON list per scenario, in two sets.

- `Pairwise_set/<goal>/<scenario>.json`: `pair_uid`, `conversation_input` (a list of {role, content, language}
  ending with a user turn), `chosen` and `reject` ({llm_name, answer}), `category_path`
  (`Pairwise_set/<goal>/<scenario>`);
- `BoN_set/<goal>/<scenario>.json`: `bon_uid`, `conversation_input`, `bon_best` ({llm_name, answer}),
  `loser_list` (a list of them), `category_path`.

An Example's group is the record's `category_path`; chosen = (the chosen answer,) or (bon_best,), rejected =
(reject,) or the losers in order. Ids are `pair:<pair_uid>` and `bon:<bon_uid>`: the two sets number their
records independently (every bon_uid is also a pair_uid). The published files hold blank texts (two answers
of whitespace in Harmlessness/S5, five empty user turns in a Translation scenario); they are scored as they
are, as upstream scores them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example, Message
from ..shared import fields as check
from .constants import BON, CATEGORY_PATHS, PAIRWISE

KINDS = {"pair_uid": ("pair", PAIRWISE), "bon_uid": ("bon", BON)}


def files_in(directory: Path) -> list[Path]:
    """Every JSON file under the directory (RMB nests its scenarios in folders), by path."""
    return sorted(p for p in directory.rglob("*.json") if p.is_file())


def _answer(value: Any, where: str, key: str) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("answer"), str):
        raise DataError(f"{where}: '{key}' must be an object with a string 'answer'")
    return str(value["answer"])


def _conversation(value: Any, where: str) -> tuple[Message, ...]:
    """user/assistant turns, alternating, ending with a user turn; texts may be blank (the published data has some)."""
    if not isinstance(value, list) or not value:
        raise DataError(f"{where}: 'conversation_input' must be a non-empty list of messages")
    out: list[Message] = []
    for i, m in enumerate(value):
        at = f"conversation_input[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            raise DataError(f"{where}: '{at}' must be an object with a string 'content'")
        expected = "user" if i % 2 == 0 else "assistant"
        if m.get("role") != expected:
            raise DataError(f"{where}: '{at}' has role {m.get('role')!r}, expected {expected}")
        out.append({"role": expected, "content": m["content"]})
    if out[-1]["role"] != "user":
        raise DataError(f"{where}: 'conversation_input' must end with a user turn")
    return tuple(out)


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated RMB pair or best-of-N list, or a DataError naming file and record."""
    record, where = check.record(record, path, index)
    uid_key = next((k for k in KINDS if k in record), None)
    if uid_key is None:
        raise DataError(f"{where}: neither 'pair_uid' nor 'bon_uid' (not an RMB record)")
    kind, set_name = KINDS[uid_key]
    keys = ("chosen", "reject") if kind == "pair" else ("bon_best", "loser_list")
    missing = [k for k in ("conversation_input", *keys, "category_path") if k not in record]
    if missing:
        raise DataError(f"{where}: missing key(s) {', '.join(missing)}")
    path_value = record["category_path"]
    if path_value not in CATEGORY_PATHS or not path_value.startswith(set_name + "/"):
        raise DataError(f"{where}: 'category_path' {path_value!r} is no {set_name} scenario of RMB")
    chosen: tuple[str, ...]
    rejected: tuple[str, ...]
    if kind == "pair":
        chosen = (_answer(record["chosen"], where, "chosen"),)
        rejected = (_answer(record["reject"], where, "reject"),)
    else:
        losers = record["loser_list"]
        if not isinstance(losers, list) or not losers:
            raise DataError(f"{where}: 'loser_list' must be a non-empty list of answers")
        chosen = (_answer(record["bon_best"], where, "bon_best"),)
        rejected = tuple(_answer(v, where, f"loser_list[{i}]") for i, v in enumerate(losers))
    uid = check.ident(record[uid_key], where, uid_key)
    return Example(
        id=f"{kind}:{uid}",
        benchmark="rmb",
        group=path_value,
        prompt=_conversation(record["conversation_input"], where),
        chosen=chosen,
        rejected=rejected,
    )
