"""EndpointPool over MockTransport endpoints: spreading, caps, ejection, recovery, load, outages, cancellation."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import Any

import httpx
import pytest
from helpers_http import endpoint

import rmbench_client.pool.endpoint_pool as scheduler
from rmbench_client.backends.base import Endpoint
from rmbench_client.backends.transport import request_json
from rmbench_client.errors import ConfigError, EndpointError, RetryableError, SampleError
from rmbench_client.pool.endpoint_pool import EndpointPool

pytestmark = pytest.mark.timeout(60)
A, B = "http://a.test", "http://b.test"


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    monkeypatch.setattr(scheduler, "retry_delay", lambda attempt, retry_after=None: 0.0)


def make_pool(role: str, endpoints: list[Endpoint], **kw: Any) -> EndpointPool:
    """A pool with short patience and probe interval, so a regression fails in seconds, not minutes."""
    return EndpointPool(role, endpoints, **({"all_down_patience": 2.0, "probe_interval": 0.01} | kw))


def score(ep: Endpoint) -> Any:
    return request_json(ep, "POST", "/score", {"x": 1})


class Servers:
    """Two fake servers behind one MockTransport: per-host counters, concurrency, health and failure switches."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls: Counter[str] = Counter()
        self.health_checks: Counter[str] = Counter()
        self.current: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.failing: set[str] = set()  # hosts answering 503 to /score
        self.sick: set[str] = set()  # hosts answering 503 to /health
        self.responses: list[httpx.Response] = []

    async def handler(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if request.url.path == "/health":
            self.health_checks[host] += 1
            response = httpx.Response(503 if host in self.sick else 200)
        else:
            self.calls[host] += 1
            self.current[host] += 1
            self.peak[host] = max(self.peak[host], self.current[host])
            try:
                await asyncio.sleep(self.delay)
            finally:
                self.current[host] -= 1
            response = httpx.Response(503) if host in self.failing else httpx.Response(200, json={"host": host})
        self.responses.append(response)
        return response


def test_least_outstanding_spreads_concurrent_calls():
    servers = Servers(delay=0.02)

    async def go() -> list[Any]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool("reward", [endpoint(A, "m", client), endpoint(B, "m", client)], concurrency=8)
            results = await asyncio.gather(*(pool.call(score) for _ in range(8)))
            assert pool.requests_sent() == {A: 4, B: 4}
            await pool.aclose()
            return results

    results = asyncio.run(go())
    assert Counter(r["host"] for r in results) == {"a.test": 4, "b.test": 4}
    assert servers.peak == {"a.test": 4, "b.test": 4}
    assert all(r.is_closed for r in servers.responses)


def test_per_endpoint_concurrency_cap():
    servers = Servers(delay=0.005)

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool("reward", [endpoint(A, "m", client), endpoint(B, "m", client)], concurrency=3)
            await asyncio.gather(*(pool.call(score) for _ in range(60)))
            await pool.aclose()

    asyncio.run(go())
    assert sum(servers.calls.values()) == 60
    assert servers.peak["a.test"] == 3 and servers.peak["b.test"] == 3  # reached, never exceeded


def test_failing_endpoint_is_ejected_and_comes_back():
    servers = Servers()
    servers.failing.add("a.test")
    servers.sick.add("a.test")

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool(
                "reward",
                [endpoint(A, "m", client), endpoint(B, "m", client)],
                eject_after=3,
                probe_interval=0.005,
            )
            try:
                for _ in range(3):  # ties go to A first: A fails 3 times in a row and is taken out
                    assert (await pool.call(score))["host"] == "b.test"
                failures_on_a = servers.calls["a.test"]
                assert failures_on_a == 3
                for _ in range(10):
                    assert (await pool.call(score))["host"] == "b.test"
                assert servers.calls["a.test"] == failures_on_a  # no traffic while ejected
                await asyncio.sleep(0.05)
                assert servers.health_checks["a.test"] >= 2  # probed, still answering 503
                assert servers.calls["a.test"] == failures_on_a

                servers.failing.clear()
                servers.sick.clear()
                for _ in range(200):  # the probe sees /health 200 and puts A back
                    await asyncio.sleep(0.005)
                    if A in [s.endpoint.url for s in pool._states if s.healthy]:
                        break
                hosts = [(await pool.call(score))["host"] for _ in range(4)]
                assert "a.test" in hosts
                assert servers.calls["a.test"] > failures_on_a
            finally:
                await pool.aclose()
                await asyncio.sleep(0)

    asyncio.run(go())
    assert all(r.is_closed for r in servers.responses)


def test_all_endpoints_down_past_patience():
    servers = Servers()
    servers.failing.update({"a.test", "b.test"})
    servers.sick.update({"a.test", "b.test"})

    async def go() -> float:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool(
                "policy",
                [endpoint(A, "m", client), endpoint(B, "m", client)],
                max_retries=100,
                all_down_patience=0.2,
                eject_after=1,
                probe_interval=0.01,
            )
            start = time.monotonic()
            try:
                with pytest.raises(EndpointError) as info:
                    await pool.call(score)
            finally:
                await pool.aclose()
                await asyncio.sleep(0)
            assert type(info.value) is EndpointError  # not retryable: the run stops
            assert "policy" in str(info.value) and A in str(info.value) and B in str(info.value)
            return time.monotonic() - start

    elapsed = asyncio.run(go())
    assert 0.2 <= elapsed < 5.0
    assert servers.calls == {"a.test": 1, "b.test": 1}  # one failure each ejected both
    assert servers.health_checks["a.test"] >= 2


def test_sample_error_does_not_eject():
    servers = Servers()

    async def bad_request(ep: Endpoint) -> Any:
        await request_json(ep, "POST", "/score", {})
        raise SampleError("too long")

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool("reward", [endpoint(A, "m", client)], eject_after=2)
            for _ in range(5):
                with pytest.raises(SampleError):
                    await pool.call(bad_request)
            assert (await pool.call(score))["host"] == "a.test"
            assert pool.retries == 0
            await pool.aclose()

    asyncio.run(go())
    assert servers.calls["a.test"] == 6


def test_retryable_error_reaches_caller_after_max_retries():
    servers = Servers()
    servers.failing.update({"a.test", "b.test"})

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool("reward", [endpoint(A, "m", client), endpoint(B, "m", client)], max_retries=3)
            with pytest.raises(RetryableError):
                await pool.call(score)
            assert pool.retries == 3
            await pool.aclose()

    asyncio.run(go())
    assert sum(servers.calls.values()) == 4


# --- load, probes without /health, outages and cancellation ------------------------------------------------------


def test_429_never_ejects_and_the_call_succeeds():
    count = Counter()

    def handler(request: httpx.Request) -> httpx.Response:
        count[request.url.path] += 1
        if request.url.path == "/score" and count["/score"] <= 5:
            return httpx.Response(429, json={"error": "rate limited"})
        return httpx.Response(200, json={"ok": True})

    async def go() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            pool = make_pool("judge", [endpoint(A, "m", client)], eject_after=1)
            try:
                result = await pool.call(score)
                assert all(s.healthy for s in pool._states)
                return result
            finally:
                await pool.aclose()

    assert asyncio.run(go()) == {"ok": True}
    assert count["/score"] == 6 and count["/health"] == 0  # never taken out, so never probed


def test_ejected_endpoint_without_health_is_probed_with_v1_models():
    count = Counter()
    state = {"up": False}

    def handler(request: httpx.Request) -> httpx.Response:
        count[request.url.path] += 1
        if request.url.path == "/health":
            return httpx.Response(404)  # a hosted OpenAI-compatible API has no /health
        if request.url.path == "/v1/models":
            assert request.headers["authorization"] == "Bearer k"
            return httpx.Response(200 if state["up"] else 503, json={"data": []})
        if not state["up"]:
            return httpx.Response(503)
        return httpx.Response(200, json={"ok": True})

    async def go() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            pool = make_pool("judge", [endpoint(A, "m", client, {"Authorization": "Bearer k"})], eject_after=1)
            try:
                task = asyncio.ensure_future(pool.call(score))
                while count["/v1/models"] < 2:  # ejected, /health is 404, /v1/models answers 503 for now
                    await asyncio.sleep(0.005)
                state["up"] = True
                return await task
            finally:
                await pool.aclose()

    assert asyncio.run(go()) == {"ok": True}
    assert count["/health"] == 1  # asked once; after its 404 only /v1/models is probed


def test_outage_past_patience_fails_waiters_and_backoff_sleepers_promptly(monkeypatch):
    monkeypatch.setattr(scheduler, "retry_delay", lambda attempt, retry_after=None: 30.0)  # a long backoff
    servers = Servers()
    servers.failing.add("a.test")
    servers.sick.add("a.test")

    async def go() -> tuple[list[Any], float]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool("reward", [endpoint(A, "m", client)], concurrency=2, eject_after=1, all_down_patience=0.3)
            start = time.monotonic()
            try:
                results = await asyncio.gather(*(pool.call(score) for _ in range(20)), return_exceptions=True)
            finally:
                await pool.aclose()
            return results, time.monotonic() - start

    results, elapsed = asyncio.run(go())
    assert elapsed < 3.0  # patience 0.3 s; nobody sleeps out the 30 s backoff
    assert all(type(r) is EndpointError and "stayed down" in str(r) for r in results)


def test_cancelling_callers_during_an_outage_leaves_the_pool_usable():
    """The run's Ctrl-C path: every caller is cancelled while the role is down; nothing hangs or lingers."""
    servers = Servers()
    servers.failing.add("a.test")
    servers.sick.add("a.test")

    async def go() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool("reward", [endpoint(A, "m", client)], concurrency=1, eject_after=1, all_down_patience=60)
            tasks = [asyncio.ensure_future(pool.call(score)) for _ in range(10)]
            while servers.health_checks["a.test"] < 1:
                await asyncio.sleep(0.005)
            for t in tasks:
                t.cancel()
            done, pending = await asyncio.wait(tasks, timeout=2.0)
            assert not pending and all(t.cancelled() for t in done)
            assert not pool._waiting.waiters and not pool._waiting.sleepers
            servers.failing.clear()
            servers.sick.clear()
            try:
                return await asyncio.wait_for(pool.call(score), timeout=5.0)  # the endpoint comes back
            finally:
                await pool.aclose()

    assert asyncio.run(go()) == {"host": "a.test"}


def test_a_woken_caller_that_is_cancelled_passes_its_slot_on():
    servers = Servers(delay=0.02)

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = make_pool("reward", [endpoint(A, "m", client)], concurrency=1)
            first = asyncio.ensure_future(pool.call(score))
            await asyncio.sleep(0.005)
            second = asyncio.ensure_future(pool.call(score))  # waits for the one slot
            third = asyncio.ensure_future(pool.call(score))
            await asyncio.sleep(0.005)
            await first  # releases: wakes `second` ...
            second.cancel()  # ... which is cancelled before it runs: `third` must get the slot
            assert (await asyncio.wait_for(third, timeout=2.0))["host"] == "a.test"
            await pool.aclose()

    asyncio.run(go())


# --- membership: admission when an endpoint comes back, a source that cannot be read ------------------------------


class Admits:
    """An admission check: the URLs in `good` pass, those in `other` serve another model, the rest are down."""

    def __init__(self, good: set[str]) -> None:
        self.good = good
        self.other: set[str] = set()
        self.asked: Counter[str] = Counter()

    def _verdict(self, ep: Endpoint) -> Exception | None:
        if ep.url in self.other:
            return ConfigError(f"endpoint {ep} serves 'another-model', not the role's 'm'")
        return None if ep.url in self.good else EndpointError(f"{ep} is down")

    async def start(self, endpoints: list[Endpoint]) -> list[Exception | None]:
        return [self._verdict(ep) for ep in endpoints]

    async def __call__(self, ep: Endpoint) -> None:
        self.asked[ep.url] += 1
        if (problem := self._verdict(ep)) is not None:
            raise problem

    recheck = __call__


class Source:
    def __init__(self, urls: list[str]) -> None:
        self.now: list[str] | Exception = urls

    async def urls(self) -> list[str]:
        if isinstance(self.now, Exception):
            raise self.now
        return list(self.now)


def sourced_pool(client: httpx.AsyncClient, source: Source, admits: Admits, **kw: Any) -> EndpointPool:
    return make_pool(
        "reward",
        [],
        source=source,
        make_endpoint=lambda url: endpoint(url, "m", client),
        admission=admits,
        refresh_interval=0.01,
        **({"eject_after": 1, "probe_interval": 0.005} | kw),
    )


def test_an_endpoint_back_with_another_model_gets_no_work_until_the_right_one_returns(caplog):
    """A rejection is not for the rest of the run: the URL is checked again, and the right server is taken back."""
    caplog.set_level(logging.INFO, "rmbench_client")
    servers = Servers()
    admits = Admits({A, B})

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = sourced_pool(client, Source([A, B]), admits)
            try:
                await pool.start()
                await asyncio.gather(*(pool.call(score) for _ in range(4)))
                assert servers.calls["b.test"] == 2
                servers.failing.add("b.test")
                servers.sick.add("b.test")
                await asyncio.gather(*(pool.call(score) for _ in range(4)))  # B fails once and is taken out
                admits.other.add(B)  # B restarts serving another model
                servers.failing.clear()
                servers.sick.clear()
                while B in [s.endpoint.url for s in pool._states]:  # its probe answers; admission refuses it
                    await asyncio.sleep(0.005)
                before = servers.calls["b.test"]
                await asyncio.gather(*(pool.call(score) for _ in range(20)))
                assert servers.calls["b.test"] == before
                assert servers.calls["a.test"] >= 22
                asked = admits.asked[B]
                while admits.asked[B] < asked + 3:  # checked again on the probe schedule
                    await asyncio.sleep(0.005)
                admits.other.discard(B)  # the right server is back at B's URL
                while B not in [s.endpoint.url for s in pool._states]:
                    await asyncio.sleep(0.005)
                await asyncio.gather(*(pool.call(score) for _ in range(20)))
                assert servers.calls["b.test"] > before
            finally:
                await pool.aclose()

    asyncio.run(go())
    assert f"reward endpoint {B} is left out: endpoint {B} serves 'another-model'" in caplog.text
    assert f"reward endpoint {B} joins (identity checked)" in caplog.text


def test_a_source_that_cannot_be_read_leaves_the_pool_as_it_is(caplog):
    servers = Servers()
    source = Source([A, B])

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = sourced_pool(client, source, Admits({A, B}))
            try:
                await pool.start()
                source.now = RuntimeError("the registry is unreachable")
                servers.failing.add("b.test")
                servers.sick.add("b.test")
                results = await asyncio.gather(*(pool.call(score) for _ in range(20)))  # B taken out; re-read
                assert all(r["host"] == "a.test" for r in results)
                while "cannot read the endpoint list" not in caplog.text:
                    await asyncio.sleep(0.005)
                servers.failing.clear()
                servers.sick.clear()
                while not all(s.healthy for s in pool._states):  # B is still a member: it comes back
                    await asyncio.sleep(0.005)
                assert [s.endpoint.url for s in pool._states] == [A, B]
            finally:
                await pool.aclose()

    asyncio.run(go())


def test_a_source_that_cannot_be_read_at_start_is_one_endpoint_error():
    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(Servers().handler)) as client:
            pool = sourced_pool(client, Source([]), Admits(set()))
            with pytest.raises(EndpointError, match="^no reward endpoint is listed$"):
                await pool.start()
            source = Source([])
            source.now = RuntimeError("the registry is unreachable")
            pool = sourced_pool(client, source, Admits(set()))
            with pytest.raises(EndpointError, match="cannot read the reward endpoints: RuntimeError: the registry"):
                await pool.start()

    asyncio.run(go())


def test_an_endpoint_taken_out_at_start_gets_work_only_after_admission():
    """What the start-up does with an endpoint whose fingerprint could not be taken: out until admitted again."""
    servers = Servers()
    admits = Admits({A})

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(servers.handler)) as client:
            pool = sourced_pool(client, Source([A, B]), Admits({A, B}))
            try:
                await pool.start()
                pool._admission = admits  # B does not pass for now
                pool.take_out(pool.endpoints[1], "its fingerprint could not be taken")
                await asyncio.gather(*(pool.call(score) for _ in range(10)))
                await asyncio.sleep(0.05)  # probed meanwhile (/health answers), refused by admission
                await asyncio.gather(*(pool.call(score) for _ in range(10)))
                assert servers.calls["b.test"] == 0 and servers.health_checks["b.test"] >= 2
                admits.good.add(B)
                while not all(s.healthy for s in pool._states):
                    await asyncio.sleep(0.005)
                await asyncio.gather(*(pool.call(score) for _ in range(10)))
                assert servers.calls["b.test"] > 0
            finally:
                await pool.aclose()

    asyncio.run(go())
