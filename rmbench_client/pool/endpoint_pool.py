"""Sending requests to the endpoints of one role: least-outstanding choice, per-endpoint concurrency and the rate
limit per HTTP request, retries with backoff, ejection of failing endpoints and probes that bring them back, the
identity check of every connection, and which endpoint answered.

Each `call` is one HTTP request. A retryable failure is retried (on whichever endpoint is then best) up to
`max_retries` times. An endpoint with several failures in a row is taken out, as is one that falls silent while its
peers answer (outliers.py: its requests are hedged to the others, the first answer wins: hedging.py); a 429 is
load, not ill health, and never takes an endpoint out. An endpoint taken out comes back only once a real scoring
request succeeds there (probation.py: its probe, its identity check on a growing backoff, then one request at a
time until one succeeds). With `same_endpoint_per_prompt`, a prompt's requests of a role stay on one endpoint
(pinning.py).

A server restarted or swapped behind an endpoint's URL is reached through a new connection: once the role's
identity is settled, every connection passes `check_connection` (admission's recheck over that very connection,
backends/connection_check.py) before it carries a request. An endpoint found serving another model is taken out at
once (EndpointChanged: its request goes elsewhere, nothing it said is used), `changes` says so, and it is checked
again on the probe schedule until the right server is back.

While no endpoint of a role is at work, calls wait, until the right server returns or the outage clock runs out
(outages.py: every waiting and every later call then fails, so the run ends). Membership (the source, admission,
joining and leaving) is membership.py, each member's book-keeping endpoint_state.py, the identity checks of members
at work vouching.py, and the waiting callers (on plain futures: a cancelled one leaves nothing behind) waiting.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

from .. import constants as C
from ..backends.base import Endpoint
from ..backends.retry import retry_delay
from ..errors import ConfigError, EndpointChanged, EndpointError, PinBroken, RetryableError
from . import outliers, pinning, provenance
from .endpoint_state import EndpointState
from .hedging import Flight, Race
from .membership import Membership
from .outages import Outage
from .probation import comeback
from .provenance import Answerer
from .vouching import vouch_at_end, vouch_connection
from .waiting import Waiting

if TYPE_CHECKING:
    from .admission import AdmissionCheck, Identity
    from .discovery import EndpointSource

log = logging.getLogger(__name__)
T = TypeVar("T")
Request = Callable[[Endpoint], Awaitable[T]]  # one HTTP request to an endpoint


class EndpointPool:
    """The endpoints serving one role of a run."""

    def __init__(
        self,
        role: str,
        endpoints: list[Endpoint] | None = None,
        concurrency: int = C.MAX_CONCURRENCY_PER_ENDPOINT,
        max_retries: int = C.MAX_RETRIES,
        all_down_patience: float = C.ALL_DOWN_PATIENCE_S,
        throttle: AbstractAsyncContextManager[Any] | None = None,
        eject_after: int = C.ENDPOINT_FAILURES_TO_EJECT,
        probe_interval: float = C.ENDPOINT_PROBE_INTERVAL_S,
        *,
        source: EndpointSource | None = None,
        make_endpoint: Callable[[str], Endpoint] | None = None,
        admission: AdmissionCheck | None = None,
        refresh_interval: float | None = None,
        rejected_grace: float | None = None,
    ) -> None:
        """`endpoints` are members at once (no admission); with a `source`, `make_endpoint` (a URL to an Endpoint
        with the role's client, headers and transport) and `admission`, `start` fills the pool."""
        self.role = role
        self._capacity = concurrency
        self._states = [EndpointState(ep, concurrency, Answerer(role=role, url=ep.shown)) for ep in endpoints or []]
        self._retired: list[EndpointState] = []  # members the source no longer lists, or that serve another model now
        self._admission = admission
        self.members: Membership | None = None
        if source is not None:
            assert make_endpoint is not None and admission is not None
            refresh = C.ENDPOINT_SOURCE_REFRESH_S if refresh_interval is None else refresh_interval
            self.members = Membership(self, source, make_endpoint, admission, refresh, probe_interval)
        self._max_retries = max_retries
        grace = C.REJECTED_GRACE_S if rejected_grace is None else rejected_grace
        self._outage = Outage(role, all_down_patience, grace, self._outside, self._give_up)
        self._throttle = throttle
        self._eject_after = eject_after
        self._probe_interval = probe_interval
        self._waiting = Waiting()  # callers waiting for a free, healthy endpoint, and those in retry backoff
        self._down: EndpointError | None = None  # set once an outage outlasted its patience
        self._watcher: asyncio.Task[None] | None = None  # the watch over requests in flight (`_watch`)
        self.retries = 0
        self.hedges = 0  # requests sent again to another endpoint (`_hedge`)
        self.hedges_won = 0  # of them, those whose answer was used
        self.changes: list[str] = []  # endpoints whose server changed during the run, in words
        self.taken_out: list[str] = []  # each time an endpoint was taken out, and why

    @property
    def endpoints(self) -> list[Endpoint]:
        """The admitted endpoints (at work or taken out for now)."""
        return [s.endpoint for s in self._states]

    def requests_sent(self) -> dict[str, int]:
        sent: dict[str, int] = {}
        for s in self._retired + self._states:
            sent[s.endpoint.url] = sent.get(s.endpoint.url, 0) + s.sent
        return sent

    async def call(self, fn: Request[T]) -> T:
        """`fn(endpoint)` (one HTTP request) on the best endpoint, retried on retryable errors."""
        attempt = 0
        pin = pinning.current()
        while True:
            state = await self._acquire(pin)
            try:
                result, state = await self._send(state, fn, pin is not None)
            except EndpointChanged:  # its new connection reached another model: nothing it said is used
                continue
            except RetryableError as exc:
                if isinstance(exc, PinBroken) or attempt >= self._max_retries:
                    raise
                delay = retry_delay(attempt, exc.retry_after)
                log.debug("retry %d/%d in %.2fs after %s", attempt + 1, self._max_retries, delay, exc)
                attempt += 1
                self.retries += 1
                if self._down is None:  # an outage past patience cuts the backoff short (the call then fails)
                    await self._waiting.sleep(delay)
                continue
            provenance.answered(state.answerer)
            return result

    async def _send(self, state: EndpointState, fn: Request[T], pinned: bool) -> tuple[T, EndpointState]:
        """`fn` on `state`'s endpoint; with peers, as a race that the watch may hedge (the winner's endpoint)."""
        if len(self._states) < 2:  # nothing to hedge to: the request as it is, no task of its own
            return await self._attempt(state, fn), state
        race: Race[EndpointState] = Race.of(fn, pinned)
        race.add(asyncio.get_running_loop().create_task(self._attempt(state, fn, race)), state)
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        try:
            winner = await race.first
        finally:
            race.cancel_rest()  # the losers (or, cancelled, every attempt): never counted
        won = race.where[winner]
        result: T = winner.result()  # the first attempt's failure, when every attempt failed
        if len(race.attempts) > 1:
            self._settled(race, won)
        return result, won

    async def _attempt(self, state: EndpointState, fn: Request[T], race: Race[EndpointState] | None = None) -> T:
        """One request on `state`'s endpoint (its slot taken): the slot released and the outcome counted at its end."""
        flight: Flight[EndpointState] | None = None
        try:
            async with self._throttle or nullcontext():
                state.sent += 1
                flight = state.take_off(race)  # on the wire from now: what the outlier rule measures
                result = await fn(state.endpoint)
        except BaseException as exc:
            if flight is not None:
                state.landed(flight, answered=False)
            self._ended(state, exc)
            raise
        state.landed(flight, answered=True)
        self._release(state, failed=False)
        if state.probation:  # its canary succeeded: a full share from now on
            state.probation, state.proved = False, True
            log.info("%s endpoint %s is at work again (a request succeeded there)", self.role, state.endpoint)
            self._waiting.wake()
        return result

    def _ended(self, state: EndpointState, exc: BaseException) -> None:
        """An attempt on `state` failed (or was cancelled: a lost race, the caller's own, never counted)."""
        if isinstance(exc, EndpointChanged):
            self._release(state, failed=False)
            self._changed(state, exc)
        elif isinstance(exc, RetryableError):
            self._release(state, failed=not exc.overloaded, error=exc)
            provenance.failed_at(state.answerer)
        else:
            self._release(state, failed=False)  # not the endpoint's fault (a sample error, a cancellation)
            if not isinstance(exc, asyncio.CancelledError):
                provenance.failed_at(state.answerer)

    def _settled(self, race: Race[EndpointState], won: EndpointState) -> None:
        """A hedged request ended: an endpoint whose requests keep losing to hedges is taken out."""
        original = race.original
        if won is original:
            original.losses = 0
            return
        self.hedges_won += 1
        original.losses += 1
        if original.healthy and original.losses >= C.HEDGE_LOSSES_TO_EJECT and original in self._states:
            self._eject(original, f"its requests lost {original.losses} hedges in a row to other endpoints")

    async def _acquire(self, pin: pinning.Pin | None = None, exclude: EndpointState | None = None) -> EndpointState:
        while True:
            if self._down is not None:
                raise self._down
            ready = pin.ready(self.role, self._states) if pin is not None else None
            if ready is None:
                ready = [s for s in self._states if s.healthy and s.inflight < s.slots and s is not exclude]
            if ready:
                best = min(ready, key=lambda s: s.inflight)
                best.inflight += 1
                if pin is not None:
                    pin.urls.setdefault(self.role, best.endpoint.url)
                return best
            await self._waiting.wait(first=exclude is not None)  # a hedge goes before fresh requests

    def _release(self, state: EndpointState, failed: bool, error: BaseException | None = None) -> None:
        state.inflight -= 1
        if not failed:
            state.failures = 0
        else:
            state.failures += 1
            if state.healthy and state in self._states and (state.probation or state.failures >= self._eject_after):
                why = "its first request back failed" if state.probation else f"after {state.failures} failures"
                self._eject(state, f"{why} (the last: {error})")
        self._waiting.wake(1)

    # --- grey failures: the watch over requests in flight (outliers.py) ---------------------------------------

    async def _watch(self) -> None:
        """While requests are in flight: every OUTLIER_TICK_S, the silent endpoints taken out, overdue requests
        hedged into idle capacity."""
        while any(s.flights for s in self._states):
            await asyncio.sleep(C.OUTLIER_TICK_S)
            self._look(time.monotonic())

    def _look(self, now: float) -> None:
        found = outliers.look(self._states, now, waiting=bool(self._waiting.waiters))
        for state, why in found.silent:
            self._eject(state, why)  # its requests outstanding hedged
        for flight in found.overdue:
            self._hedge(flight)

    def _hedge(self, flight: Flight[Any]) -> None:
        """Send `flight`'s request to another endpoint too (a pinned one's prompt is scored again elsewhere)."""
        race = flight.race
        if race is None or flight.hedged or race.first.done():
            return
        flight.hedged = True
        if race.pinned:
            race.fail(PinBroken(f"{self.role} endpoint {flight.state.endpoint} is out of work while a prompt's "
                                "requests were kept on it"))  # fmt: skip
            return
        self.hedges += 1
        log.debug("%s: a request outstanding on %s for %.1fs hedged", self.role, flight.state.endpoint,
                  time.monotonic() - flight.started)  # fmt: skip
        race.add(asyncio.get_running_loop().create_task(self._hedged(race, flight.state)))

    async def _hedged(self, race: Race[EndpointState], away_from: EndpointState) -> Any:
        state = await self._acquire(exclude=away_from)
        race.at(state)
        return await self._attempt(state, race.fn, race)

    def _eject(self, state: EndpointState, why: str = "") -> None:
        """Take `state` out: its requests outstanding hedged to the others, it comes back on probation."""
        state.healthy = False
        state.why = why or f"after {state.failures} failures"
        stayed = time.monotonic() - state.since
        state.backoff = outliers.next_backoff(state.backoff, state.proved, stayed, min(C.ENDPOINT_FIRST_PROBE_S,
                                                                                    self._probe_interval))  # fmt: skip
        log.warning("%s endpoint %s taken out %s; tried again in %.1fs", self.role, state.endpoint, state.why,
                    state.backoff)  # fmt: skip
        self.taken_out.append(f"{state.endpoint} {state.why}")
        for flight in list(state.flights):
            self._hedge(flight)
        state.probe = asyncio.get_running_loop().create_task(comeback(self, state))
        self._waiting.wake()  # the callers kept on it (a pin) see it is out
        self.reassess()

    def _changed(self, state: EndpointState, exc: EndpointChanged) -> None:
        """A member whose server changed leaves the pool at once; its URL is checked again until the right server
        is back (membership.py), or stays out of the pool without a source."""
        if state not in self._states:
            return  # another of its connections found it first
        said = f"{self.role} endpoint {state.endpoint} changed during the run: {exc}"
        log.warning("%s; taken out, nothing it answered since is used", said)
        self.changes.append(said)
        self.leave(state.endpoint.url)
        if self.members is not None:
            self.members.reject(state.endpoint, exc)

    # --- the identity check of every new connection ------------------------------------------------------------

    async def check_connection(self, url: str) -> bool:
        """The role's ConnectionCheck: admission's recheck of the member at work whose URL `url` is under, over the
        new connection (False for other URLs: what is not at work is admitted before it gets work)."""
        state = next((s for s in self._states if s.healthy and s.owns(url)), None)
        if state is None or self._admission is None:
            return False
        await vouch_connection(self._admission, state)
        return True

    async def recheck(self) -> list[str]:
        """Every member at work checked once more (the end of scoring): the URLs of those that serve another model
        now, said in `changes` (their answers in this run are the caller's to keep apart)."""
        if self._admission is None:
            return []
        changed = await vouch_at_end(self._admission, [s for s in self._states if s.healthy])
        for state, found in changed:
            said = f"{self.role} endpoint {state.endpoint} serves another model at the end of scoring: {found}"
            log.warning("%s", said)
            self.changes.append(said)
        return [state.endpoint.shown for state, _ in changed]  # as their answers name them

    # --- membership: what membership.Membership calls -----------------------------------------------------------

    def join(self, ep: Endpoint, identity: Identity | None, about: dict[str, str] | None = None) -> None:
        """`ep` passed admission: it gets work."""
        answerer = Answerer(role=self.role, url=ep.shown, **(about or {}))
        state = EndpointState(ep, self._capacity, answerer)
        state.reports(identity)
        self._states = [*self._states, state]
        self.reassess()
        self._waiting.wake()

    def leave(self, url: str) -> None:
        """The member at `url` leaves the pool; its calls in flight end as they would (a request that fails goes to
        another endpoint), and nothing more is sent to it."""
        for state in [s for s in self._states if s.endpoint.url == url]:
            self._states = [s for s in self._states if s is not state]
            state.healthy = False
            if state.probe is not None and state.probe is not asyncio.current_task():
                state.probe.cancel()
            self._retired.append(state)
        self.reassess()

    def take_out(self, ep: Endpoint, why: str) -> None:
        """Take `ep` out until it answers and passes admission again."""
        for state in self._states:
            if state.endpoint.url == ep.url and state.healthy:
                self._eject(state, f"({why})")

    async def start(self) -> None:
        """Read the source and admit the endpoints that pass (admission.py); the others are tried until they do.
        EndpointError or ConfigError when none can be admitted."""
        assert self.members is not None
        await self.members.start()
        self.reassess()

    # --- outages ------------------------------------------------------------------------------------------------

    @property
    def probe_interval(self) -> float:
        return self._probe_interval

    async def admit(self, state: EndpointState) -> Identity | None:
        return await self._admission(state.endpoint) if self._admission is not None else None

    def reject(self, state: EndpointState, problem: ConfigError) -> None:
        self.leave(state.endpoint.url)
        if self.members is not None:
            self.members.reject(state.endpoint, problem)

    def restore(self, state: EndpointState, identity: Identity | None) -> None:
        state.reports(identity)
        state.healthy, state.probation, state.proved, state.failures, state.losses = True, True, False, 0, 0
        state.why = ""
        state.since = time.monotonic()
        log.info("%s endpoint %s is back on probation: one request at a time until one succeeds", self.role,
                 state.endpoint)  # fmt: skip
        self.reassess()
        self._waiting.wake()

    def reassess(self) -> None:
        """Start, switch or stop the outage clock (outages.py)."""
        self._outage.reassess(self._down is not None or any(s.healthy for s in self._states))

    def _outside(self) -> dict[str, tuple[bool, str]]:
        """Every listed endpoint not at work: (whether it serves another model, why it is out)."""
        out = {s.endpoint.url: (False, s.why) for s in self._states if not s.healthy}
        if self.members is not None:
            out |= self.members.outside()
        return out

    def _give_up(self, error: EndpointError) -> None:
        self._down = error
        self._waiting.wake_all()

    async def aclose(self) -> None:
        self._outage.stop()
        if self._watcher is not None:
            self._watcher.cancel()
        if self.members is not None:
            self.members.close()
        for state in self._states:
            if state.probe is not None:
                state.probe.cancel()
