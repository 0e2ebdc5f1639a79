"""Sending requests to the endpoints of one role: least-outstanding choice, per-endpoint concurrency and the rate
limit per HTTP request, retries with backoff, ejection of failing endpoints and probes that bring them back.

Each `call` is one HTTP request. A retryable failure is retried (on whichever endpoint is then best) up to
`max_retries` times. An endpoint with several failures in a row is taken out and probed (`GET /health`, or
`GET /v1/models` where there is no `/health`) until it answers; a 429 is load, not ill health, and never takes an
endpoint out. While every endpoint of a role is out, calls wait; when that lasts `all_down_patience` seconds,
every waiting and every later call fails with one EndpointError naming the role and its URLs, so the run ends.

Membership: a pool built with a `source` (discovery.py) and an `admission` check (admission.py) reads the source
at `start` and admits what answers; an endpoint down at start is probed until it answers and passes admission, and
one that serves another model stays out with a warning. An ejected endpoint that answers its probe again passes
admission again before it gets work. While the pool is short of endpoints (one taken out, dropped or not admitted
yet, or none left) it re-reads its source every `refresh_interval` seconds: new URLs are admitted first, URLs no
longer listed leave the pool (their calls in flight end as they would). The call path is the same as without.

Waiting is done on plain futures that the pool resolves (no asyncio.Condition, no wait_for): a cancelled caller
holds no lock and leaves nothing behind, so Ctrl-C and an outage both end promptly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from . import constants as C
from .backends.base import Endpoint
from .errors import ConfigError, EndpointError, RetryableError, RmbError
from .retry import retry_delay

if TYPE_CHECKING:
    from .admission import AdmissionCheck
    from .discovery import EndpointSource

log = logging.getLogger(__name__)
T = TypeVar("T")


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class _State:
    """Book-keeping of one endpoint."""

    def __init__(self, endpoint: Endpoint, capacity: int) -> None:
        self.endpoint = endpoint
        self.capacity = capacity
        self.inflight = 0
        self.failures = 0  # consecutive
        self.healthy = True
        self.probe: asyncio.Task[None] | None = None
        self.probe_paths = list(C.PROBE_PATHS)
        self.sent = 0


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
    ) -> None:
        """`endpoints` are members at once (no admission); with a `source`, `make_endpoint` (a URL to an Endpoint
        with the role's client, headers and transport) and `admission`, `start` fills the pool."""
        self.role = role
        self._capacity = concurrency
        self._states = [_State(ep, concurrency) for ep in endpoints or []]
        self._source = source
        self._make = make_endpoint
        self._admission = admission
        self._refresh_interval = C.ENDPOINT_SOURCE_REFRESH_S if refresh_interval is None else refresh_interval
        self._pending: dict[str, asyncio.Task[None]] = {}  # listed, not admitted yet: tried until admitted
        self._rejected: dict[str, str] = {}  # listed, serving something else: out while the source lists it
        self._retired: list[_State] = []  # members the source no longer lists
        self._refresher: asyncio.Task[None] | None = None
        self._last_read = float("-inf")
        self._peak = len(self._states)  # the most endpoints at work: fewer is short
        self._closed = False
        self._max_retries = max_retries
        self._patience = all_down_patience
        self._throttle = throttle
        self._eject_after = eject_after
        self._probe_interval = probe_interval
        self._waiters: deque[asyncio.Future[None]] = deque()  # callers waiting for a free, healthy endpoint
        self._sleepers: set[asyncio.Future[None]] = set()  # callers in retry backoff
        self._outage: asyncio.TimerHandle | None = None
        self._down: EndpointError | None = None  # set once an outage outlasted the patience
        self.retries = 0

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
            except RetryableError as exc:
                self._release(state, failed=not exc.overloaded, error=exc)
                if attempt >= self._max_retries:
                    raise
                delay = retry_delay(attempt, exc.retry_after)
                log.debug("retry %d/%d in %.2fs after %s", attempt + 1, self._max_retries, delay, exc)
                attempt += 1
                self.retries += 1
                await self._sleep(delay)
                continue
            except BaseException:
                self._release(state, failed=False)  # not the endpoint's fault (sample error, cancellation)
                raise
            self._release(state, failed=False)
            return result

    async def _acquire(self) -> _State:
        while True:
            if self._down is not None:
                raise self._down
            ready = [s for s in self._states if s.healthy and s.inflight < s.capacity]
            if ready:
                best = min(ready, key=lambda s: s.inflight)
                best.inflight += 1
                return best
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.cancelled():  # cancelled while queued: leave the queue
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)
                else:  # woken, then cancelled before taking the slot: it goes to the next caller
                    self._wake(1)
                raise

    def _wake(self, n: int | None = None) -> None:
        """Resolve the oldest `n` waiters (all when None); each then looks for a slot again."""
        while self._waiters and (n is None or n > 0):
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                n = None if n is None else n - 1

    async def _sleep(self, delay: float) -> None:
        """A backoff that an outage past patience cuts short (the caller then fails in `_acquire`)."""
        if self._down is not None:
            return
        fut = asyncio.get_running_loop().create_future()
        handle = asyncio.get_running_loop().call_later(delay, _resolve, fut)
        self._sleepers.add(fut)
        try:
            await fut
        finally:
            handle.cancel()
            self._sleepers.discard(fut)

    def _release(self, state: _State, failed: bool, error: BaseException | None = None) -> None:
        state.inflight -= 1
        if not failed:
            state.failures = 0
        else:
            state.failures += 1
            if state.healthy and state.failures >= self._eject_after:
                self._eject(state, f"after {state.failures} failures (the last: {error})")
        self._wake(1)

    def _eject(self, state: _State, why: str = "") -> None:
        state.healthy = False
        why = why or f"after {state.failures} failures"
        log.warning("%s endpoint %s taken out %s", self.role, state.endpoint, why)
        state.probe = asyncio.get_running_loop().create_task(self._probe(state))
        self._short_now()

    def _short_now(self) -> None:
        """The pool lost an endpoint: re-read the source while short; with none at work, the outage clock runs."""
        self._watch()
        if not any(s.healthy for s in self._states) and self._outage is None:
            log.warning("every %s endpoint is down; waiting up to %.0fs", self.role, self._patience)
            self._outage = asyncio.get_running_loop().call_later(self._patience, self._give_up)

    def _give_up(self) -> None:
        urls = ", ".join([s.endpoint.url for s in self._states] + list(self._pending)) or "none listed"
        self._down = EndpointError(f"every {self.role} endpoint stayed down for {self._patience:.0f}s: {urls}")
        self._wake()
        for fut in list(self._sleepers):
            if not fut.done():
                fut.set_result(None)

    async def _probe(self, state: _State) -> None:
        """Poll, soon at first and then less often, until the endpoint answers 200 and passes admission; put it
        back (or, serving another model now, drop it)."""
        ep = state.endpoint
        interval = min(C.ENDPOINT_FIRST_PROBE_S, self._probe_interval)
        while True:
            await asyncio.sleep(interval)
            interval = min(interval * 2, self._probe_interval)
            if await self._answers(state):
                problem = await self._admit(ep)
                if problem is None:
                    break
                if isinstance(problem, ConfigError):
                    self._drop(state)
                    self._reject(ep.url, problem)
                    return
        state.healthy = True
        state.failures = 0
        log.info("%s endpoint %s is back", self.role, ep)
        self._back()

    def _back(self) -> None:
        """An endpoint is at work again: the outage (if any) is over; every waiter looks again."""
        self._peak = max(self._peak, sum(s.healthy for s in self._states))
        if self._outage is not None:
            self._outage.cancel()
            self._outage = None
        self._wake()

    async def _answers(self, state: _State) -> bool:
        """GET the endpoint's probe path; a 404 means it has none (hosted APIs have no /health): try the next."""
        ep = state.endpoint
        try:
            response = await ep.client.get(ep.url + state.probe_paths[0], headers=ep.headers)
            await response.aclose()
        except httpx.HTTPError:
            return False
        if response.status_code == 404 and len(state.probe_paths) > 1:
            state.probe_paths.pop(0)
            return await self._answers(state)
        return response.status_code == 200

    # --- membership: admission at start and on joining, the source re-read while short ----------------------------

    async def start(self) -> None:
        """Read the source and admit the endpoints that pass (admission.py); the ones down are tried until they
        do. EndpointError or ConfigError when none can be admitted."""
        assert self._make is not None and self._admission is not None
        try:
            urls = await self._read()
        except RmbError:
            raise
        except Exception as exc:  # a registry's own error, or no answer in time: one line, no traceback
            raise EndpointError(f"cannot read the {self.role} endpoints: {type(exc).__name__}: {exc}") from None
        listed = [self._make(url) for url in urls]
        if not listed:
            raise EndpointError(f"no {self.role} endpoint is listed")
        for ep, problem in zip(listed, await self._admission.start(listed), strict=True):
            if problem is None:
                self._states.append(_State(ep, self._capacity))
            elif isinstance(problem, ConfigError):
                self._reject(ep.url, problem)
            else:
                log.warning("%s endpoint %s not reachable yet (%s); it joins when it answers and passes the "
                            "identity check", self.role, ep, problem)  # fmt: skip
                self._pend(ep)
        self._peak = len(self._states)
        self._watch()

    def take_out(self, ep: Endpoint, why: str) -> None:
        """Take `ep` out until it answers and passes admission again."""
        for state in self._states:
            if state.endpoint.url == ep.url and state.healthy:
                self._eject(state, f"({why})")

    def _pend(self, ep: Endpoint) -> None:
        self._pending[ep.url] = asyncio.get_running_loop().create_task(self._join(ep))

    async def _join(self, ep: Endpoint) -> None:
        """Try admission, soon at first and then less often, until `ep` passes (it joins) or is rejected."""
        interval = min(C.ENDPOINT_FIRST_PROBE_S, self._probe_interval)
        while (problem := await self._admit(ep)) is not None and not isinstance(problem, ConfigError):
            log.debug("%s endpoint %s not admitted yet: %s", self.role, ep, problem)
            await asyncio.sleep(interval)
            interval = min(interval * 2, self._probe_interval)
        del self._pending[ep.url]
        if problem is not None:
            self._reject(ep.url, problem)
            return
        self._states = [*self._states, _State(ep, self._capacity)]
        log.info("%s endpoint %s joins (identity checked)", self.role, ep)
        self._back()

    async def _admit(self, ep: Endpoint) -> Exception | None:
        """None when `ep` passes admission (always, without an admission check); else why not."""
        if self._admission is None:
            return None
        try:
            await self._admission(ep)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a ConfigError: it serves something else; anything else: it is down for now
            return exc
        return None

    def _reject(self, url: str, problem: Exception) -> None:
        self._rejected[url] = str(problem)
        log.warning("%s endpoint %s stays out of this run: %s", self.role, url, problem)

    def _drop(self, state: _State) -> None:
        """`state` leaves the pool; its calls in flight end as they would (a dropped state is never taken out)."""
        self._states = [s for s in self._states if s is not state]
        state.healthy = False
        if state.probe is not None and state.probe is not asyncio.current_task():
            state.probe.cancel()
        self._retired.append(state)
        self._short_now()

    def _short(self) -> bool:
        healthy = sum(s.healthy for s in self._states)
        return healthy < max(self._peak, 1) or bool(self._pending)

    def _watch(self) -> None:
        """Re-read the source (at most every `refresh_interval`) for as long as the pool is short."""
        if self._source is None or self._closed or not self._short():
            return
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.get_running_loop().create_task(self._refresh_while_short())

    async def _refresh_while_short(self) -> None:
        loop = asyncio.get_running_loop()
        while self._short():
            await asyncio.sleep(max(0.0, self._last_read + self._refresh_interval - loop.time()))
            await self._refresh()

    async def _read(self) -> list[str]:
        """The source's URLs now, each once; a source that does not answer in time raises TimeoutError."""
        assert self._source is not None
        self._last_read = asyncio.get_running_loop().time()
        async with asyncio.timeout(C.ENDPOINT_SOURCE_TIMEOUT_S):
            return list(dict.fromkeys(u.rstrip("/") for u in await self._source.urls()))

    async def _refresh(self) -> None:
        """Drop what the source no longer lists; admit what it newly lists."""
        assert self._make is not None
        try:
            urls = await self._read()
        except Exception as exc:  # a registry that cannot be read now is read again later; the pool stays as is
            log.warning("%s: cannot read the endpoint list (%s); read again in %.0fs", self.role, exc,
                        self._refresh_interval)  # fmt: skip
            return
        listed = set(urls)
        for state in [s for s in self._states if s.endpoint.url not in listed]:
            log.info("%s endpoint %s is no longer listed: it leaves the pool", self.role, state.endpoint)
            self._drop(state)
        for url in [u for u in self._pending if u not in listed]:
            self._pending.pop(url).cancel()
        for url in [u for u in self._rejected if u not in listed]:
            del self._rejected[url]  # listed again later, it is checked again
        known = {s.endpoint.url for s in self._states} | self._pending.keys() | self._rejected.keys()
        for url in urls:
            if url not in known:
                try:
                    ep = self._make(url)
                except ConfigError as exc:  # not a URL the client can use: said once, while it is listed
                    self._reject(url, exc)
                    continue
                log.info("%s endpoint %s is listed: it joins once it passes the identity check", self.role, url)
                self._pend(ep)

    async def aclose(self) -> None:
        self._closed = True
        if self._outage is not None:
            self._outage.cancel()
        tasks = [s.probe for s in self._states] + list(self._pending.values()) + [self._refresher]
        for task in tasks:
            if task is not None:
                task.cancel()
