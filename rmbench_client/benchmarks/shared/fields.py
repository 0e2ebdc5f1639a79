"""Validating the fields every preference format shares: prompts (one turn or a conversation), response texts,
ids, and the config's field-name mapping. Each check raises one DataError naming the file and record."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Message, Prompt
from .records import record_name

ROLES = ("system", "user", "assistant")


def record(
    value: Any, path: Path, index: int, required: Iterable[str] = (), hint: str = ""
) -> tuple[dict[str, Any], str]:
    """The record as an object holding its `required` keys, and its name for errors ('FILE: record N (id X)')."""
    where = record_name(path, index, value)
    if not isinstance(value, dict):
        raise DataError(f"{where}: expected an object, got {type(value).__name__}")
    if missing := [k for k in required if k not in value]:
        raise DataError(f"{where}: missing key(s) {', '.join(missing)}{hint}")
    return value, where


def text(value: Any, where: str, key: str) -> str:
    """A non-blank string."""
    if not isinstance(value, str):
        raise DataError(f"{where}: '{key}' must be a string, got {type(value).__name__}")
    if not value.strip():
        raise DataError(f"{where}: '{key}' is empty")
    return value


def string(value: Any, where: str, key: str) -> str:
    """A string, blank or not (generated responses in the published data sometimes are: scored as they are)."""
    if not isinstance(value, str):
        raise DataError(f"{where}: '{key}' must be a string, got {type(value).__name__}")
    return value


def texts(value: Any, where: str, key: str) -> tuple[str, ...]:
    """A non-empty list of non-blank strings (parquet hands lists over as lists, JSON too)."""
    if not isinstance(value, list | tuple) or not value:
        got = "an empty list" if isinstance(value, list | tuple) else type(value).__name__
        raise DataError(f"{where}: '{key}' must be a non-empty list of strings, got {got}")
    return tuple(text(v, where, f"{key}[{i}]") for i, v in enumerate(value))


def strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    """A non-empty list of strings, blank or not (a solution's steps: the published data holds blank ones)."""
    if not isinstance(value, list | tuple) or not value:
        got = "an empty list" if isinstance(value, list | tuple) else type(value).__name__
        raise DataError(f"{where}: '{key}' must be a non-empty list of strings, got {got}")
    return tuple(string(v, where, f"{key}[{i}]") for i, v in enumerate(value))


def prompt(value: Any, where: str, key: str = "prompt") -> Prompt:
    """A user turn (string) or a conversation: a list of {"role", "content"} messages, roles system (first only),
    user and assistant, ending with a user turn. Earlier turns may be empty strings (real chat logs hold some);
    the last user turn may not."""
    if isinstance(value, str):
        return text(value, where, key)
    if not isinstance(value, list | tuple) or not value:
        got = "an empty list" if isinstance(value, list | tuple) else type(value).__name__
        raise DataError(f"{where}: '{key}' must be a string or a list of chat messages, got {got}")
    messages: list[Message] = []
    for i, m in enumerate(value):
        at = f"{key}[{i}]"
        if not isinstance(m, Mapping) or not {"role", "content"} <= m.keys():
            raise DataError(f"{where}: '{at}' must be an object with 'role' and 'content'")
        role, content = m["role"], m["content"]
        if role not in ROLES or (role == "system" and i > 0):
            allowed = "user or assistant" if i else "system, user or assistant"
            raise DataError(f"{where}: '{at}' has role {role!r}, expected {allowed}")
        if not isinstance(content, str):
            raise DataError(f"{where}: '{at}.content' must be a string, got {type(content).__name__}")
        messages.append({"role": role, "content": content})
    if messages[-1]["role"] != "user":
        raise DataError(f"{where}: '{key}' must end with a user turn, ends with {messages[-1]['role']!r}")
    text(messages[-1]["content"], where, f"{key}[{len(messages) - 1}].content")
    return tuple(messages)


def ident(value: Any, where: str, key: str = "id") -> str:
    """A string or integer id, as a string."""
    if isinstance(value, bool) or not isinstance(value, str | int) or (isinstance(value, str) and not value):
        raise DataError(f"{where}: '{key}' must be a non-empty string or an integer")
    return str(value)


def choice(value: Any, where: str, key: str, allowed: Sequence[str]) -> str:
    """One of `allowed` (a record's group, say), or a DataError naming them."""
    if value not in allowed:
        raise DataError(f"{where}: '{key}' is {value!r}, expected one of {', '.join(allowed)}")
    return str(value)


def count(value: Any, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(f"{where}: '{key}' must be an integer, got {type(value).__name__}")
    return value


def rename(record: Any, fields: Mapping[str, str]) -> Any:
    """The record with the file's field names turned into ours (`fields`: our name -> the file's name)."""
    if not fields or not isinstance(record, dict):
        return record
    out = {k: v for k, v in record.items() if k not in fields.values()}
    for ours, theirs in fields.items():
        if theirs in record:
            out[ours] = record[theirs]
        elif ours in out and ours != theirs:
            del out[ours]  # the mapping names another field: the file's own `ours` is not the one meant
    return out
