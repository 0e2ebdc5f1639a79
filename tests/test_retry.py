"""Retry policy and response parsing, against httpx.MockTransport only (no server, no sockets)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from helpers_http import Recorder, endpoint

import rmbench_client.pool.endpoint_pool as scheduler
from rmbench_client import constants as C
from rmbench_client.backends import retry
from rmbench_client.backends.transport import request_json
from rmbench_client.errors import EndpointError, RetryableError, SampleError, ShapeError
from rmbench_client.pool.endpoint_pool import EndpointPool

pytestmark = pytest.mark.timeout(60)
URL = "http://rm.test"
OK_BODY = {"data": [{"data": 1.25}]}


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch) -> list[float]:
    """Zero sleep between retries; records the delay the real policy would have chosen."""
    chosen: list[float] = []
    real = retry.retry_delay

    def instant(attempt: int, retry_after: float | None = None) -> float:
        chosen.append(real(attempt, retry_after))
        return 0.0

    monkeypatch.setattr(scheduler, "retry_delay", instant)
    return chosen


def failing_then_ok(failures: int, mode: str) -> Callable[[httpx.Request], httpx.Response]:
    count = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal count
        count += 1
        if count > failures:
            return httpx.Response(200, json=OK_BODY)
        if mode == "connect":
            raise httpx.ConnectError("connection refused", request=request)
        if mode == "read-timeout":
            raise httpx.ReadTimeout("timed out", request=request)
        if mode == "429":
            return httpx.Response(429, headers={"Retry-After": "2"}, json={"error": "slow down"})
        return httpx.Response(int(mode), json={"error": {"message": f"failure {mode}"}})

    return handler


async def pooled_call(transport: Recorder, max_retries: int = 8, **pool_args: Any) -> Any:
    # short patience and probe interval: a regression fails in seconds instead of waiting out the defaults
    pool_args = {"all_down_patience": 2.0, "probe_interval": 0.01} | pool_args
    async with httpx.AsyncClient(transport=transport) as client:
        pool = EndpointPool("reward", [endpoint(URL, "m", client)], max_retries=max_retries, **pool_args)
        try:
            return await pool.call(lambda ep: request_json(ep, "POST", "/pooling", {"input": "x"})), pool.retries
        finally:
            await pool.aclose()


MODES = ["503", "429", "500", "408", "connect", "read-timeout"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failures", [0, 1, 3])
def test_retry_table(failures, mode, no_backoff):
    transport = Recorder(failing_then_ok(failures, mode))
    body, retries = asyncio.run(pooled_call(transport, eject_after=100))
    assert body == OK_BODY
    assert retries == failures
    assert len(transport.requests) == failures + 1
    assert all(r.url == httpx.URL(URL + "/pooling") and r.method == "POST" for r in transport.requests)
    assert json.loads(transport.requests[0].content) == {"input": "x"}
    assert transport.all_closed()
    assert len(no_backoff) == failures
    if mode == "429":  # the server's Retry-After (2 s) plus up to 25 % jitter, not the exponential delay
        assert all(2.0 <= d <= 2.5 for d in no_backoff) and len(no_backoff) == failures


def test_retry_table_single_endpoint_with_default_ejection(no_backoff):
    # 3 failures eject the only endpoint; a 200 on /health brings it back and the call succeeds.
    count = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal count
        if request.url.path == "/health":
            return httpx.Response(200)
        count += 1
        return httpx.Response(200, json=OK_BODY) if count > 3 else httpx.Response(503)

    transport = Recorder(handler)
    body, _ = asyncio.run(pooled_call(transport, probe_interval=0.0))
    assert body == OK_BODY and count == 4
    assert transport.all_closed()


@pytest.mark.parametrize(("status", "error"), [(400, SampleError), (422, SampleError), (404, EndpointError)])
def test_client_errors_are_not_retried(status, error):
    transport = Recorder(lambda request: httpx.Response(status, json={"message": "prompt too long"}))
    with pytest.raises(error) as info:
        asyncio.run(pooled_call(transport))
    assert type(info.value) is error  # a 404 is neither retryable nor a sample's fault
    assert f"HTTP {status}" in str(info.value)
    assert len(transport.requests) == 1
    assert transport.all_closed()


def test_unparseable_retry_after_falls_back_to_backoff(no_backoff):
    replies = iter([httpx.Response(503, headers={"Retry-After": "soon"}), httpx.Response(200, json=OK_BODY)])
    transport = Recorder(lambda request: next(replies))
    body, retries = asyncio.run(pooled_call(transport))
    assert body == OK_BODY and retries == 1
    assert 0.0 < no_backoff[0] <= retry.retry_delay(0, jitter=0.0)  # the exponential delay of attempt 0


def test_max_retries_exhausted_reraises(no_backoff):
    transport = Recorder(lambda request: httpx.Response(503, text="overloaded"))
    with pytest.raises(RetryableError, match="HTTP 503: overloaded"):
        asyncio.run(pooled_call(transport, max_retries=2, eject_after=100))
    assert len(transport.requests) == 3
    assert len(no_backoff) == 2
    assert transport.all_closed()


@pytest.mark.parametrize("body", ["<html>proxy</html>", '{"data": [{"data": 1.2'])
def test_a_success_answer_that_is_not_json_fails_its_prompt_at_once(body):
    """HTML or malformed JSON under HTTP 200: one request, never retried, and the endpoint stays in (retried, it
    stalled the prompt through every backoff and took a server whose /health answers out as down)."""
    transport = Recorder(lambda request: httpx.Response(200, text=body))

    async def go() -> EndpointPool:
        async with httpx.AsyncClient(transport=transport) as client:
            pool = EndpointPool("reward", [endpoint(URL, "m", client)], max_retries=3, eject_after=1)
            with pytest.raises(ShapeError, match="not JSON"):
                await pool.call(lambda ep: request_json(ep, "POST", "/pooling", {"input": ["a"]}))
            await pool.aclose()
            return pool

    pool = asyncio.run(go())
    assert len(transport.requests) == 1 and transport.all_closed()
    assert pool.retries == 0 and all(s.healthy for s in pool._states)


# --- the two policy functions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 599])
def test_should_retry_statuses(status):
    assert retry.should_retry(httpx.Response(status))


@pytest.mark.parametrize("status", [200, 400, 401, 403, 404, 413, 422])
def test_should_not_retry_statuses(status):
    assert not retry.should_retry(httpx.Response(status))


def test_should_retry_exceptions():
    request = httpx.Request("GET", URL)
    assert retry.should_retry(httpx.ConnectError("refused", request=request))
    assert retry.should_retry(httpx.ReadTimeout("slow", request=request))
    assert retry.should_retry(httpx.RemoteProtocolError("dropped", request=request))
    assert not retry.should_retry(ValueError("bug"))
    assert not retry.should_retry(SampleError("too long"))


def test_retry_delay_honours_retry_after_with_jitter_up_to_a_minute(monkeypatch):
    assert retry.retry_delay(0, retry_after=2.0, jitter=0.0) == 2.0
    assert retry.retry_delay(5, retry_after=0.0) == 0.0
    assert retry.retry_delay(0, retry_after=45.0, jitter=0.0) == 45.0  # past the backoff cap: still honoured
    assert retry.retry_delay(0, retry_after=3600.0, jitter=0.0) == C.RETRY_AFTER_MAX_S  # at most a minute
    monkeypatch.setattr(retry.JITTER, "random", lambda: 1.0)
    assert retry.retry_delay(0, retry_after=2.0, jitter=0.25) == 2.5  # jitter only adds: never earlier than asked
    monkeypatch.undo()
    draws = {retry.retry_delay(0, retry_after=4.0) for _ in range(20)}
    assert len(draws) > 1 and all(4.0 <= d <= 5.0 for d in draws)


def test_retry_delay_exponential_capped_jittered():
    for attempt in range(12):
        base = min(30.0, 0.5 * 2.0**attempt)
        for _ in range(50):
            d = retry.retry_delay(attempt, initial=0.5, cap=30.0, jitter=0.25)
            assert base * 0.75 <= d <= base, (attempt, d)
    draws = {retry.retry_delay(3, initial=0.5, cap=30.0, jitter=0.25) for _ in range(20)}
    assert len(draws) > 1  # jittered
    assert retry.retry_delay(4, initial=1.0, cap=30.0, jitter=0.0) == 16.0
    assert retry.retry_delay(10, initial=1.0, cap=30.0, jitter=0.0) == 30.0


def test_retry_delay_jitter_bounds_exact(monkeypatch):
    monkeypatch.setattr(retry.JITTER, "random", lambda: 0.0)
    assert retry.retry_delay(2, initial=0.5, cap=30.0, jitter=0.25) == 2.0
    monkeypatch.setattr(retry.JITTER, "random", lambda: 1.0)
    assert retry.retry_delay(2, initial=0.5, cap=30.0, jitter=0.25) == 1.5


def test_retry_after_seconds_forms():
    assert retry.retry_after_seconds(httpx.Headers({"Retry-After": "2"})) == 2.0
    assert retry.retry_after_seconds(httpx.Headers({"retry-after": "0.5"})) == 0.5
    assert retry.retry_after_seconds(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert retry.retry_after_seconds(httpx.Headers({"Retry-After": "-3"})) == 0.0
    assert retry.retry_after_seconds(httpx.Headers({"Retry-After": "soon"})) is None
    assert retry.retry_after_seconds(httpx.Headers({})) is None
    assert retry.retry_after_seconds(None) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = retry.retry_after_seconds(httpx.Headers({"Retry-After": date}))
    assert seconds is not None and 27.0 <= seconds <= 30.5
    past = email.utils.formatdate(time.time() - 100, usegmt=True)
    assert retry.retry_after_seconds(httpx.Headers({"Retry-After": past})) == 0.0


def test_retry_jitter_leaves_the_callers_random_stream_alone():
    """A seeded training script draws the same numbers whether or not a run retried in between."""
    import random

    random.seed(3)
    expected = random.random()
    random.seed(3)
    assert retry.retry_delay(2, retry_after=None) > 0 and retry.retry_delay(0, retry_after=1.0) >= 1.0
    assert random.random() == expected
