"""Which endpoint answered: every answer the endpoint pool hands back is attributed to the endpoint it came from
(its role, its URL as it may be shown, the engine release it reported at its latest identity check, and on a Ray
cluster the replica and node the source names), collected per prompt while the prompt is scored, recorded beside
each value in the score store, in the prompt's per-sample line (`answered_by`, each answerer with the prompt's
units it answered: `units`, their positions; `cross_release` when one role's answers came from two engine
releases), and summed up in the summary.

The collection is a context variable the scoring loop sets around a prompt's scoring (`collect`): the pool adds to
it from whatever task sends the request (tasks a model kind starts inherit it), at the cost of one lookup per
request. A model kind that sends a prompt's units in several requests says which units each request is for
(`for_units`); a request it does not tag is for every unit of its role (one request for all, or a DPO role's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, TypeVar

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
    """What answered one prompt's requests (all, those tagged with the units they were for, the others), and the
    endpoint of its last failed one (the pool fills it)."""

    __slots__ = ("by", "failed", "shared", "units")

    def __init__(self) -> None:
        self.by: set[Answerer] = set()
        self.units: dict[int, set[Answerer]] = {}  # unit position -> what answered the requests tagged for it
        self.shared: set[Answerer] = set()  # what answered requests tagged for no unit: for every unit of its role
        self.failed: Answerer | None = None

    def add(self, answerer: Answerer) -> None:
        """An answer the pool hands back, for the units the running task's requests are tagged for."""
        self.by.add(answerer)
        tagged = _UNITS.get()
        if tagged is None:
            self.shared.add(answerer)
        else:
            for i in tagged:
                self.units.setdefault(i, set()).add(answerer)

    def of(self, unit: int, role: str | None) -> frozenset[Answerer]:
        """What answered unit `unit` (of role `role`, None: of every role)."""
        shared = {a for a in self.shared if role is None or a.role == role}
        return frozenset(self.units.get(unit, set()) | shared)


_ANSWERS: ContextVar[Answers | None] = ContextVar("rmbench_answers", default=None)
_UNITS: ContextVar[tuple[int, ...] | None] = ContextVar("rmbench_units", default=None)
T = TypeVar("T")


async def for_units(units: Iterable[int], work: Awaitable[T]) -> T:
    """Await `work`, its requests' answers attributed to the units at positions `units` (of the units being scored)
    alone. Run as its own task (as asyncio.gather runs each awaitable), so that the tag stays with these requests."""
    token = _UNITS.set(tuple(units))
    try:
        return await work
    finally:
        _UNITS.reset(token)


def current() -> Answers | None:
    """The collection of the prompt being scored in this task (None outside one)."""
    return _ANSWERS.get()


def answered(answerer: Answerer) -> None:
    """An answer the pool hands back to the prompt being scored in this task (if any)."""
    if (answers := _ANSWERS.get()) is not None:
        answers.add(answerer)


def failed_at(answerer: Answerer) -> None:
    """A request of the prompt being scored in this task (if any) failed at `answerer`'s endpoint: its failure line
    names the last one."""
    if (answers := _ANSWERS.get()) is not None:
        answers.failed = answerer


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


def _text(item: dict[str, Any]) -> str:
    return orjson.dumps({k: v for k, v in item.items() if k != "units"}, option=orjson.OPT_SORT_KEYS).decode()


def _order(item: dict[str, Any]) -> tuple[str, str, str]:
    return item["role"], item["url"], item.get("release") or ""


def merged(records: Iterable[Record]) -> Record:
    """Several records as one (a prompt's values stored by several runs, or part stored and part fresh)."""
    seen: dict[str, dict[str, Any]] = {}
    for rec in records:
        for item in rec:
            seen.setdefault(_text(item), item)
    return tuple(sorted(seen.values(), key=_order))


def by_unit(records: Sequence[Record]) -> Record:
    """A prompt's answerers from its units' records (`records[i]`: what answered unit i), each with the positions
    of the units it answered (`units`): a sample line's `answered_by`."""
    units: dict[str, list[int]] = {}
    items: dict[str, dict[str, Any]] = {}
    for i, rec in enumerate(records):
        for item in rec:
            text = _text(item)
            items.setdefault(text, {k: v for k, v in item.items() if k != "units"})
            units.setdefault(text, []).append(i)
    return tuple(sorted((items[t] | {"units": units[t]} for t in items), key=_order))


def cross_release(answerers: Record) -> bool:
    """Whether one role's answers came from two engine releases (a pair compared across two engines)."""
    releases: dict[str, set[str]] = {}
    for item in answerers:
        if item.get("release") is not None:
            releases.setdefault(item["role"], set()).add(item["release"])
    return any(len(found) > 1 for found in releases.values())


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
            text = _text(item)
            items.setdefault(text, {k: v for k, v in item.items() if k != "units"})
            counts[text] = counts.get(text, 0) + 1
    ordered = sorted(items, key=lambda t: _order(items[t]))
    return [items[t] | {"prompts": counts[t]} for t in ordered]
