"""Which endpoint answered: every answer the endpoint pool hands back is attributed to the endpoint it came from
(its URL and role, the engine release it reported at its latest identity check, and on a Ray cluster the replica
and node the source names), collected per prompt while the prompt is scored, recorded beside the prompt's values in
the score store and in its per-sample line (`answered_by`), and summed up in the summary.

The collection is a context variable the scoring loop sets around a prompt's scoring (`collect`): the pool adds to
it from whatever task sends the request (tasks a model kind starts inherit it), at the cost of one lookup per
request.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import msgspec
import orjson

from ..redaction import masked_url


class Answerer(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One endpoint as it answered: role, URL, engine release; on a Ray cluster its replica and node."""

    role: str
    url: str
    release: str | None = None
    replica: str | None = None
    node: str | None = None


class Answers:
    """What answered one prompt's requests, and the endpoint of its last failed one (the pool fills it)."""

    __slots__ = ("by", "failed")

    def __init__(self) -> None:
        self.by: set[Answerer] = set()
        self.failed: Answerer | None = None


_ANSWERS: ContextVar[Answers | None] = ContextVar("rmbench_answers", default=None)


def current() -> Answers | None:
    """The collection of the prompt being scored in this task (None outside one)."""
    return _ANSWERS.get()


@contextmanager
def collect() -> Iterator[Answers]:
    """Collect what answers the requests sent inside the block (and in tasks started there)."""
    answers = Answers()
    token = _ANSWERS.set(answers)
    try:
        yield answers
    finally:
        _ANSWERS.reset(token)


Record = tuple[dict[str, Any], ...]  # answerers as written: a sample line's `answered_by`, a store row's source


@lru_cache(maxsize=1024)
def record(answerers: frozenset[Answerer]) -> Record:
    """Answerers as a sample line lists them (by role, then URL); computed once per set."""
    return tuple(msgspec.to_builtins(a) for a in sorted(answerers, key=lambda a: (a.role, a.url, a.release or "")))


def encoded(answerers: Record) -> str:
    """The store's text of a record (one row of its `sources` table per distinct text)."""
    return orjson.dumps(answerers).decode()


def merged(records: Iterable[Record]) -> Record:
    """Several records as one (a prompt's values stored by several runs, or part stored and part fresh)."""
    seen: dict[str, dict[str, Any]] = {}
    for rec in records:
        for item in rec:
            seen.setdefault(orjson.dumps(item, option=orjson.OPT_SORT_KEYS).decode(), item)
    return tuple(sorted(seen.values(), key=lambda a: (a["role"], a["url"], a.get("release") or "")))


def named(rec: Record, url: str) -> bool:
    """Whether an endpoint at `url` is among a record's answerers (which name it masked: redaction.py)."""
    shown = masked_url(url)
    return any(item.get("url") == shown for item in rec)


def tally(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Every answerer of a result with the number of its prompts it answered (part of): the summary's
    `answered_by`, in which every engine release that answered is named."""
    counts: dict[str, int] = {}
    items: dict[str, dict[str, Any]] = {}
    for rec in records:
        for item in rec:
            text = orjson.dumps(item, option=orjson.OPT_SORT_KEYS).decode()
            items.setdefault(text, item)
            counts[text] = counts.get(text, 0) + 1
    ordered = sorted(items, key=lambda t: (items[t]["role"], items[t]["url"], items[t].get("release") or ""))
    return [items[t] | {"prompts": counts[t]} for t in ordered]
