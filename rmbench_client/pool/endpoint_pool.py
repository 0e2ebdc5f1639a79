"""Sending requests to the endpoints of one role: least-outstanding choice, per-endpoint concurrency and the rate
limit per HTTP request, retries with backoff, ejection of failing endpoints and probes that bring them back, the
identity check of every connection, and which endpoint answered.

Each `call` is one HTTP request. A retryable failure is retried (on whichever endpoint is then best) up to
`max_retries` times. An endpoint with several failures in a row is taken out and probed (`GET /health`, or
`GET /v1/models` where there is no `/health`) until it answers and passes admission again; a 429 is load, not ill
health, and never takes an endpoint out.

A server restarted or swapped behind an endpoint's URL is reached through a new connection: once the role's
identity is settled, every connection passes `check_connection` (admission's recheck over that very connection,
backends/connection_check.py) before it carries a request. An endpoint found serving another model is taken out at
once (EndpointChanged: its request goes elsewhere, nothing it said is used), `changes` says so, and it is checked
again on the probe schedule until the right server is back.

While no endpoint of a role is at work, calls wait. When every listed endpoint serves another model, the run ends
after `rejected_grace` seconds unless the right server returns; otherwise (one is down, or none is listed) after
`all_down_patience` seconds; every waiting and every later call then fails with one EndpointError naming each URL
and why it is out, so the run ends. Membership (the source, admission, joining and leaving) is membership.py,
each member's book-keeping endpoint_state.py, and the waiting callers (on plain futures: a cancelled one leaves
nothing behind) waiting.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from .. import constants as C
from ..backends.base import Endpoint
from ..backends.retry import retry_delay
from ..errors import ConfigError, EndpointChanged, EndpointError, RetryableError, RmbError
from ..redaction import masked_url
from . import provenance
from .endpoint_state import EndpointState
from .membership import Membership
from .provenance import Answerer
from .waiting import Waiting

if TYPE_CHECKING:
    from .admission import AdmissionCheck, Identity
    from .discovery import EndpointSource

log = logging.getLogger(__name__)
T = TypeVar("T")


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
        self._states = [EndpointState(ep, concurrency, Answerer(role=role, url=masked_url(ep.url)))
                        for ep in endpoints or []]  # fmt: skip
        self._retired: list[EndpointState] = []  # members the source no longer lists, or that serve another model now
        self._admission = admission
        self.members: Membership | None = None
        if source is not None:
            assert make_endpoint is not None and admission is not None
            refresh = C.ENDPOINT_SOURCE_REFRESH_S if refresh_interval is None else refresh_interval
            self.members = Membership(self, source, make_endpoint, admission, refresh, probe_interval)
        self._max_retries = max_retries
        self._patience = all_down_patience
        self._grace = C.REJECTED_GRACE_S if rejected_grace is None else rejected_grace
        self._throttle = throttle
        self._eject_after = eject_after
        self._probe_interval = probe_interval
        self._waiting = Waiting()  # callers waiting for a free, healthy endpoint, and those in retry backoff
        self._outage: tuple[str, asyncio.TimerHandle] | None = None  # why no endpoint is at work, and its clock
        self._down: EndpointError | None = None  # set once an outage outlasted its patience
        self.retries = 0
        self.changes: list[str] = []  # endpoints whose server changed during the run, in words

    @property
    def endpoints(self) -> list[Endpoint]:
        """The admitted endpoints (at work or taken out for now)."""
        return [s.endpoint for s in self._states]

    def requests_sent(self) -> dict[str, int]:
        sent: dict[str, int] = {}
        for s in self._retired + self._states:
            sent[s.endpoint.url] = sent.get(s.endpoint.url, 0) + s.sent
        return sent

    async def call(self, fn: Callable[[Endpoint], Awaitable[T]]) -> T:
        """`fn(endpoint)` (one HTTP request) on the best endpoint, retried on retryable errors."""
        attempt = 0
        while True:
            state = await self._acquire()
            try:
                async with self._throttle or nullcontext():
                    state.sent += 1
                    result = await fn(state.endpoint)
            except EndpointChanged as exc:  # its new connection reached another model: nothing it said is used
                self._release(state, failed=False)
                self._changed(state, exc)
                continue
            except RetryableError as exc:
                self._release(state, failed=not exc.overloaded, error=exc)
                if attempt >= self._max_retries:
                    self._failed_at(state)
                    raise
                delay = retry_delay(attempt, exc.retry_after)
                log.debug("retry %d/%d in %.2fs after %s", attempt + 1, self._max_retries, delay, exc)
                attempt += 1
                self.retries += 1
                if self._down is None:  # an outage past patience cuts the backoff short (the call then fails)
                    await self._waiting.sleep(delay)
                continue
            except BaseException:
                self._release(state, failed=False)  # not the endpoint's fault (sample error, cancellation)
                self._failed_at(state)
                raise
            self._release(state, failed=False)
            if (answers := provenance.current()) is not None:
                answers.by.add(state.answerer)
            return result

    @staticmethod
    def _failed_at(state: EndpointState) -> None:
        if (answers := provenance.current()) is not None:
            answers.failed = state.answerer

    async def _acquire(self) -> EndpointState:
        while True:
            if self._down is not None:
                raise self._down
            ready = [s for s in self._states if s.healthy and s.inflight < s.capacity]
            if ready:
                best = min(ready, key=lambda s: s.inflight)
                best.inflight += 1
                return best
            await self._waiting.wait()

    def _release(self, state: EndpointState, failed: bool, error: BaseException | None = None) -> None:
        state.inflight -= 1
        if not failed:
            state.failures = 0
        else:
            state.failures += 1
            if state.healthy and state.failures >= self._eject_after and state in self._states:
                self._eject(state, f"after {state.failures} failures (the last: {error})")
        self._waiting.wake(1)

    def _eject(self, state: EndpointState, why: str = "") -> None:
        state.healthy = False
        state.why = why or f"after {state.failures} failures"
        log.warning("%s endpoint %s taken out %s", self.role, state.endpoint, state.why)
        state.probe = asyncio.get_running_loop().create_task(self._probe(state))
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
        try:
            identity = await self._admission.recheck(state.endpoint)
        except ConfigError as exc:
            raise EndpointChanged(state.endpoint.url, str(exc)) from None
        except RetryableError:
            raise
        except RmbError as exc:  # a fingerprint answered wrongly, a path gone: this server cannot be vouched for
            raise RetryableError(f"{state.endpoint}: its identity check failed: {exc}") from None
        self._note(state, identity)
        return True

    def _note(self, state: EndpointState, identity: Identity | None) -> None:
        """Attribute the member's answers to the release it reports now."""
        release = (identity or {}).get("version")
        if release is not None and release != state.answerer.release:
            if state.answerer.release is not None:
                log.info("%s endpoint %s now runs vLLM %s (was %s)", self.role, state.endpoint, release,
                         state.answerer.release)  # fmt: skip
            state.answerer = msgspec.structs.replace(state.answerer, release=release)

    async def recheck(self) -> list[str]:
        """Every member at work checked once more (the end of scoring): what changed, in words (its answers in this
        run are the caller's to keep apart). A member that cannot be asked now is not judged."""
        if self._admission is None:
            return []
        at_work = [s for s in self._states if s.healthy]
        found = await asyncio.gather(*(self._admission.recheck(s.endpoint) for s in at_work), return_exceptions=True)
        changed = []
        for state, result in zip(at_work, found, strict=True):
            if isinstance(result, ConfigError):
                said = f"{self.role} endpoint {state.endpoint} serves another model at the end of scoring: {result}"
                log.warning("%s", said)
                self.changes.append(said)
                changed.append(state.endpoint.url)
            elif isinstance(result, asyncio.CancelledError):
                raise result
            elif not isinstance(result, BaseException):
                self._note(state, result)
        return changed

    # --- membership: what membership.Membership calls -----------------------------------------------------------

    def join(self, ep: Endpoint, identity: Identity | None, about: dict[str, str] | None = None) -> None:
        """`ep` passed admission: it gets work."""
        answerer = Answerer(role=self.role, url=masked_url(ep.url), **(about or {}))
        state = EndpointState(ep, self._capacity, answerer)
        self._note(state, identity)
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

    # --- probes and outages -------------------------------------------------------------------------------------

    async def _probe(self, state: EndpointState) -> None:
        """Poll, soon at first and then less often, until the endpoint answers 200 and passes admission; put it
        back (or, serving another model now, hand its URL to membership, which checks it again later)."""
        ep = state.endpoint
        interval = min(C.ENDPOINT_FIRST_PROBE_S, self._probe_interval)
        identity: Identity | None = None
        while True:
            await asyncio.sleep(interval)
            interval = min(interval * 2, self._probe_interval)
            if await state.answers_probe():
                try:
                    identity = await self._admission(ep) if self._admission is not None else None
                    break
                except asyncio.CancelledError:
                    raise
                except ConfigError as exc:
                    state.why = str(exc)
                    self.leave(ep.url)
                    if self.members is not None:
                        self.members.reject(ep, exc)
                    return
                except Exception as exc:  # down for now: asked again
                    state.why = str(exc)
                    log.debug("%s endpoint %s not admitted yet: %s", self.role, ep, exc)
        self._note(state, identity)
        state.healthy = True
        state.failures = 0
        state.why = ""
        log.info("%s endpoint %s is back", self.role, ep)
        self.reassess()
        self._waiting.wake()

    def reassess(self) -> None:
        """Start, switch or stop the clock of a role with no endpoint at work: `rejected_grace` while every listed
        endpoint serves another model, `all_down_patience` otherwise."""
        if any(s.healthy for s in self._states) or self._down is not None:
            if self._outage is not None:
                self._outage[1].cancel()
                self._outage = None
            return
        out = self._outside()
        mode = "rejected" if out and all(rejected for rejected, _ in out.values()) else "down"
        if self._outage is not None:
            if self._outage[0] == mode:
                return
            self._outage[1].cancel()
        wait = self._grace if mode == "rejected" else self._patience
        if mode == "rejected":
            log.warning("every %s endpoint serves another model; waiting up to %.0fs for the right one", self.role,
                        wait)  # fmt: skip
        else:
            log.warning("no %s endpoint is at work; waiting up to %.0fs", self.role, wait)
        self._outage = (mode, asyncio.get_running_loop().call_later(wait, self._give_up))

    def _outside(self) -> dict[str, tuple[bool, str]]:
        """Every listed endpoint not at work: (whether it serves another model, why it is out)."""
        out = {s.endpoint.url: (False, s.why) for s in self._states if not s.healthy}
        if self.members is not None:
            out |= self.members.outside()
        return out

    def _give_up(self) -> None:
        assert self._outage is not None
        mode, _ = self._outage
        out = self._outside()
        if mode == "rejected":
            listed = "; ".join(f"{url}: {why}" for url, (_, why) in out.items())
            message = f"every {self.role} endpoint serves another model (for {self._grace:.0f}s): {listed}"
        elif not out:
            message = f"the {self.role} endpoint list stayed empty for {self._patience:.0f}s (its source lists none)"
        elif not any(rejected for rejected, _ in out.values()):
            message = f"every {self.role} endpoint stayed down for {self._patience:.0f}s: {', '.join(out)}"
        else:
            listed = "; ".join(f"{url} {'serves another model' if rejected else 'is down'} ({why})"
                               for url, (rejected, why) in out.items())  # fmt: skip
            message = f"no {self.role} endpoint could be used for {self._patience:.0f}s: {listed}"
        self._down = EndpointError(message)
        self._outage = None
        self._waiting.wake_all()

    async def aclose(self) -> None:
        if self._outage is not None:
            self._outage[1].cancel()
        if self.members is not None:
            self.members.close()
        for state in self._states:
            if state.probe is not None:
                state.probe.cancel()
