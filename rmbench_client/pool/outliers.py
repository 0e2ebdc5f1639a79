"""The rule that finds a frozen or much slower endpoint by comparing it with its peers (pure functions; the endpoint
pool applies them, endpoint_pool.py).

An endpoint is *silent* when it has requests outstanding and has answered none of them for longer than its silence
limit, while its peers (the other endpoints of the role at work) answered at least `OUTLIER_MIN_PEER_ANSWERS`
requests meanwhile. The limit is `OUTLIER_FACTOR` times the slowest of the peers' last `OUTLIER_WINDOW` answers
(each from its request's sending, its wait in the server's queue included), divided by the requests it has
outstanding, and never less than `OUTLIER_MIN_SILENCE_S`:

- a healthy endpoint with j requests outstanding answers one about every j-th of a request's time (a server under
  load answers its queue in turn), and one alone within a request's time: four times that is far outside what it
  does (a GC pause or a long prefill included);
- peers that are slow alike (a judge whose every answer takes minutes) raise the limit alike: nobody is an
  outlier, and the requests wait for `client.read_timeout` as before;
- an endpoint alone has no peers, and nothing to compare: it waits for its timeouts;
- a pause of the client itself (every endpoint silent at once) leaves the peers without answers either: nobody is
  taken out.

A silent endpoint is taken out and its requests hedged (sent again to a peer; the first answer wins). A request
older than the limit on an endpoint that still answers others is hedged only into idle capacity (no caller waits
for a slot): the tail of a run on a much slower endpoint. The limit is a comparison, so it holds whatever
`client.read_timeout` is.

An endpoint taken out comes back on a growing backoff (`next_backoff`): soon the first time, then from
`ENDPOINT_BACKOFF_S` doubled each time it is taken out again before it proved itself (or soon after), up to
`ENDPOINT_BACKOFF_MAX_S`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from .. import constants as C
from .hedging import Flight


@dataclass(frozen=True)
class Limit:
    """How long an endpoint may stay silent: the limit, and the slowest peer answer it comes from (for the log)."""

    seconds: float
    slowest_peer: float


def limit(peer_durations: Iterable[float], outstanding: int = 1) -> Limit | None:
    """The silence limit of an endpoint with `outstanding` requests, given the durations of its peers' recent
    answers; None when they have answered nothing yet (nothing to compare with)."""
    slowest = max(peer_durations, default=None)
    if slowest is None:
        return None
    return Limit(max(C.OUTLIER_MIN_SILENCE_S, C.OUTLIER_FACTOR * slowest / max(1, outstanding)), slowest)


def silent_since(last_answer: float, oldest_outstanding: float) -> float:
    """Since when an endpoint with requests outstanding has been silent: its last answer, or its oldest outstanding
    request when that went out later (it had nothing to answer before)."""
    return max(last_answer, oldest_outstanding)


def is_silent(since: float, now: float, bar: Limit | None, peer_answers: int) -> bool:
    """Whether an endpoint silent since `since` is an outlier now: silent past the limit while its peers answered
    `peer_answers` (>= OUTLIER_MIN_PEER_ANSWERS) requests in that time."""
    return bar is not None and now - since > bar.seconds and peer_answers >= C.OUTLIER_MIN_PEER_ANSWERS


def overdue(started: float, now: float, bar: Limit | None) -> bool:
    """Whether one request is older than the limit (a hedge into idle capacity is worth sending)."""
    return bar is not None and now - started > bar.seconds


def next_backoff(previous: float, proved: bool, stayed: float, first: float = C.ENDPOINT_FIRST_PROBE_S) -> float:
    """The wait before an endpoint taken out now is tried again: `first` (soon: a blip) when it had not been out
    before (`previous` 0), or when it proved itself since it came back (a request succeeded there) and then
    stayed at work long (`ENDPOINT_BACKOFF_RESET` times its last wait); else twice the last, at least
    `ENDPOINT_BACKOFF_S`, up to `ENDPOINT_BACKOFF_MAX_S`: a half-alive endpoint costs ever fewer canaries."""
    if previous <= 0 or (proved and stayed > C.ENDPOINT_BACKOFF_RESET * previous):
        return first
    return min(max(previous * 2, C.ENDPOINT_BACKOFF_S), C.ENDPOINT_BACKOFF_MAX_S)


class Member(Protocol):
    """A pool's endpoint as the rule sees it (endpoint_state.EndpointState)."""

    @property
    def healthy(self) -> bool: ...

    @property
    def flights(self) -> Collection[Flight[Any]]: ...

    @property
    def answers(self) -> Collection[tuple[float, float]]:
        """Its recent answers: (when, how long it took)."""
        ...

    @property
    def inflight(self) -> int: ...

    @property
    def slots(self) -> int: ...

    def silent_since(self) -> float: ...


M = TypeVar("M", bound=Member)


@dataclass
class Verdict(Generic[M]):
    """What a look at a pool's requests in flight found: endpoints to take out (with why), requests to hedge."""

    silent: list[tuple[M, str]] = field(default_factory=list)
    overdue: list[Flight[Any]] = field(default_factory=list)


def look(members: Sequence[M], now: float, waiting: bool) -> Verdict[M]:
    """Each member with requests in flight against its peers at work: silent ones to take out (their requests are
    hedged then), and, where there is idle capacity (no caller `waiting` for a slot, and a peer with a free one),
    requests older than the limit on members that still answer. Each member's peers are the others at work: their
    slowest answer and their answers since a time come from one pass over every answer (a look at 64 endpoints
    takes under a millisecond; a pool with requests in flight looks every OUTLIER_TICK_S)."""
    found: Verdict[M] = Verdict()
    at_work = [m for m in members if m.healthy]
    slowest = sorted(((max((d for _, d in m.answers), default=0.0), i) for i, m in enumerate(at_work)), reverse=True)
    times = sorted(when for m in at_work for when, _ in m.answers)
    for member in [m for m in members if m.flights]:
        peers = [p for p in at_work if p is not member]
        top = next((d for d, i in slowest if at_work[i] is not member and at_work[i].answers), None)
        bar = limit([] if top is None else [top], len(member.flights))
        if bar is None:
            continue
        since = member.silent_since()
        own = sum(1 for when, _ in member.answers if when > since) if member.healthy else 0
        answered = len(times) - bisect_right(times, since) - own
        if member.healthy and is_silent(since, now, bar, answered):
            why = (f"(silent for {now - since:.1f}s with {len(member.flights)} request(s) outstanding, while its "
                   f"peers answered {answered} requests, each within {bar.slowest_peer:.2f}s)")  # fmt: skip
            found.silent.append((member, why))
        elif not waiting and any(p.inflight < p.slots for p in peers):
            one = limit([bar.slowest_peer])  # a request alone against the peers' slowest answer
            found.overdue += [f for f in member.flights if not f.hedged and overdue(f.started, now, one)]
    return found
