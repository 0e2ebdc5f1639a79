"""Grey failures in the endpoint pool, over MockTransport endpoints with the rule's constants scaled down (so a
regression fails in seconds): a frozen endpoint among peers is taken out and its requests hedged (the first answer
wins, the loser is cancelled and never counted); peers slow alike are no outliers; an endpoint alone waits; a
half-alive endpoint comes back only once a request succeeds there, one request at a time and on a growing backoff;
a request on a much slower endpoint is hedged into idle capacity; the concurrency and rate limit hold for hedges;
a prompt's requests kept on one endpoint. The rule's pure parts: pool/outliers.py. Real servers frozen and
half-alive: tests/test_faults.py.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from helpers_http import endpoint

import rmbench_client.pool.endpoint_pool as scheduler
from rmbench_client import constants as C
from rmbench_client.backends.transport import request_json
from rmbench_client.errors import PinBroken
from rmbench_client.pool import outliers, pinning, provenance
from rmbench_client.pool.endpoint_pool import EndpointPool

pytestmark = pytest.mark.timeout(60)
A, B, D = "http://a.test", "http://b.test", "http://d.test"


@pytest.fixture(autouse=True)
def quick_rule(monkeypatch):
    """The rule at a tenth of its time scale; no retry backoff."""
    monkeypatch.setattr(scheduler, "retry_delay", lambda attempt, retry_after=None: 0.0)
    monkeypatch.setattr(C, "OUTLIER_MIN_SILENCE_S", 0.3)
    monkeypatch.setattr(C, "OUTLIER_TICK_S", 0.02)
    monkeypatch.setattr(C, "ENDPOINT_BACKOFF_S", 0.2)
    monkeypatch.setattr(C, "ENDPOINT_BACKOFF_MAX_S", 1.6)


class Hosts:
    """Fake servers behind one MockTransport: each host answers /score after its `delay`, or never while `frozen`
    (its /health answers all the while: half-alive); counts requests, cancellations (a hedge's loser) and peaks."""

    def __init__(self, delay: float = 0.01, **delays: float) -> None:
        self.delay, self.delays = delay, delays
        self.frozen: set[str] = set()
        self.calls: Counter[str] = Counter()
        self.cancelled: Counter[str] = Counter()
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.log: list[tuple[float, str]] = []  # (when, host) of every /score request

    async def handler(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if request.url.path == "/health":
            return httpx.Response(200)
        self.calls[host] += 1
        self.log.append((time.monotonic(), host))
        self.now[host] += 1
        self.peak[host] = max(self.peak[host], self.now[host])
        try:
            await asyncio.sleep(self.delays.get(host.split(".")[0], self.delay))
            while host in self.frozen:
                await asyncio.sleep(0.005)
        except asyncio.CancelledError:
            self.cancelled[host] += 1
            raise
        finally:
            self.now[host] -= 1
        return httpx.Response(200, json={"host": host, "n": self.calls[host]})


def score(ep: Any) -> Any:
    return request_json(ep, "POST", "/score", {"x": 1})


@asynccontextmanager
async def pool_of(hosts: Hosts, urls: list[str], **kw: Any):
    async with httpx.AsyncClient(transport=httpx.MockTransport(hosts.handler)) as client:
        pool = EndpointPool("reward", [endpoint(u, "m", client) for u in urls], **({"probe_interval": 0.05} | kw))
        try:
            yield pool
        finally:
            await pool.aclose()
            await asyncio.sleep(0.01)  # the losers' cancellations land


def state(pool: EndpointPool, url: str) -> Any:
    return next(s for s in pool._states if s.endpoint.url == url)


# --- the rule's pure parts ----------------------------------------------------------------------------------------


def test_the_limit_is_four_times_the_slowest_peer_answer_and_never_below_the_floor():
    assert outliers.limit([]) is None  # no peer answered yet: nothing to compare with
    assert outliers.limit([0.01, 0.02]).seconds == 0.3  # the floor (scaled down here)
    bar = outliers.limit([0.5, 2.0, 1.0])
    assert bar.seconds == 8.0 and bar.slowest_peer == 2.0
    assert not outliers.is_silent(since=0.0, now=7.9, bar=bar, peer_answers=100)
    assert outliers.is_silent(since=0.0, now=8.1, bar=bar, peer_answers=C.OUTLIER_MIN_PEER_ANSWERS)
    # peers that answered nothing meanwhile (a pause of the client itself): nobody is silent
    assert not outliers.is_silent(since=0.0, now=100.0, bar=bar, peer_answers=C.OUTLIER_MIN_PEER_ANSWERS - 1)
    assert outliers.silent_since(last_answer=5.0, oldest_outstanding=3.0) == 5.0
    assert outliers.silent_since(last_answer=5.0, oldest_outstanding=7.0) == 7.0


def test_the_backoff_doubles_until_the_endpoint_proves_itself_and_stays():
    first = C.ENDPOINT_FIRST_PROBE_S
    waits = [outliers.next_backoff(0.0, True, 0.0, first)]
    for _ in range(6):  # taken out again before a request succeeded there
        waits.append(outliers.next_backoff(waits[-1], False, 30.0, first))
    assert waits == [first, 0.2, 0.4, 0.8, 1.6, 1.6, 1.6]  # from ENDPOINT_BACKOFF_S, doubled, capped
    assert outliers.next_backoff(0.8, True, 0.5, first) == 1.6  # proved, but out again soon: no reset
    assert outliers.next_backoff(0.8, True, 4 * 0.8 + 0.1, first) == first  # proved and stayed long: afresh


# --- a frozen endpoint among peers -------------------------------------------------------------------------------


def test_a_frozen_endpoint_is_taken_out_and_its_requests_hedged_each_answered_once():
    """Calls keep coming (as a run's do) until the frozen endpoint is taken out: how soon depends on how fast its
    peer answers on this machine (the limit is four times its slowest answer), never on a timeout."""
    hosts = Hosts(delay=0.01)

    async def go() -> tuple[list[Any], float]:
        async with pool_of(hosts, [A, B], concurrency=4) as pool:
            calls: list[asyncio.Future[Any]] = []
            frozen_at = 0.0
            while (state(pool, A).healthy or not frozen_at) and len(calls) < 4000:
                calls += [asyncio.ensure_future(pool.call(score)) for _ in range(10)]
                if not frozen_at and hosts.calls["a.test"] >= 20:
                    hosts.frozen.add("a.test")
                    frozen_at = time.monotonic()
                await asyncio.sleep(0.02)
            taken_out_after = time.monotonic() - frozen_at
            assert not state(pool, A).healthy and "silent for" in pool.taken_out[0]  # (later, back on probation)
            results = await asyncio.gather(*calls)
            assert pool.hedges == pool.hedges_won >= 1  # every request in flight on A answered by B
            assert pool.requests_sent()[B] + pool.requests_sent()[A] == len(calls) + pool.hedges
            return results, taken_out_after

    results, after = asyncio.run(go())
    assert all(r["host"] in ("a.test", "b.test") for r in results)  # each call answered once, by one host
    assert after < 10.0  # the floor of 0.3 s or four peer answers, the tick: far below any read timeout
    frozen_ones = hosts.calls["a.test"] - sum(1 for r in results if r["host"] == "a.test")
    assert hosts.cancelled["a.test"] == frozen_ones > 0  # the losers cancelled, their answers never used
    assert hosts.peak["b.test"] <= 4  # hedges keep B's concurrency


def test_peers_slow_alike_are_no_outliers_and_an_endpoint_alone_waits():
    """A judge whose answers take long everywhere (here 0.5 s, longer than the floor; one endpoint twice as slow)
    is nobody's outlier; one endpoint alone has no peers, and waits for its answer however long."""
    hosts = Hosts(a=0.5, b=1.0)

    async def slow_everywhere() -> None:
        async with pool_of(hosts, [A, B], concurrency=1) as pool:
            await asyncio.gather(*(pool.call(score) for _ in range(6)))
            assert pool.hedges == 0 and not pool.taken_out

    asyncio.run(slow_everywhere())
    alone = Hosts(a=0.8)

    async def one() -> None:
        async with pool_of(alone, [A], concurrency=1) as pool:
            await pool.call(score)  # answers after the floor: no peer to compare with, so it waits
            alone.frozen.add("a.test")
            asyncio.get_running_loop().call_later(1.0, alone.frozen.discard, "a.test")
            assert (await pool.call(score))["host"] == "a.test"
            assert pool.hedges == 0 and not pool.taken_out

    asyncio.run(one())


# --- a half-alive endpoint ----------------------------------------------------------------------------------------


def test_a_half_alive_endpoint_comes_back_only_when_a_request_succeeds_there():
    """/health answers, /score never does: taken out once silent, it comes back on probation (one request at a
    time), fails again, and waits ever longer; once it answers again its canary succeeds and it gets its full
    share. Every request is answered once, by B meanwhile."""
    hosts = Hosts(delay=0.01)

    async def go() -> dict[str, Any]:
        async with pool_of(hosts, [A, B], concurrency=4) as pool:
            hosts.frozen.add("a.test")
            start = time.monotonic()
            results = []
            while time.monotonic() - start < 3.0:  # steady load for 3 s
                results += await asyncio.gather(*(pool.call(score) for _ in range(8)))
            sent_while_frozen = hosts.calls["a.test"]
            comebacks = sum(said.startswith(A) for said in pool.taken_out)  # silent, or its canary failed or lost
            hosts.frozen.discard("a.test")
            while not (state(pool, A).healthy and not state(pool, A).probation):
                await asyncio.gather(*(pool.call(score) for _ in range(8)))
            after = Counter(r["host"] for r in await asyncio.gather(*(pool.call(score) for _ in range(64))))
            return {"results": results, "sent": sent_while_frozen, "outs": comebacks, "after": after,
                    "backoff": state(pool, A).backoff}  # fmt: skip

    found = asyncio.run(go())
    assert all(r["host"] == "b.test" for r in found["results"])  # A never answered while half-alive
    # its first share (4), then one canary per comeback on a doubling backoff (0.2, 0.4, 0.8, 1.6 s): a handful
    assert found["sent"] <= 4 + found["outs"] + 1 and found["outs"] <= 6, found  # (+1: a canary out at the end)
    assert hosts.peak["a.test"] == 4  # its full share only before it was found out, and after it proved itself
    assert found["after"]["a.test"] > 8  # back at work with its full share


# --- a much slower endpoint: hedges into idle capacity ------------------------------------------------------------


def test_requests_on_a_much_slower_endpoint_are_hedged_into_idle_capacity_and_it_is_taken_out():
    hosts = Hosts(delay=0.01, a=5.0)

    async def go() -> float:
        async with pool_of(hosts, [A, B], concurrency=2) as pool:
            await asyncio.gather(*(pool.call(score) for _ in range(8)))  # B's answers: the peers' pace
            start = time.monotonic()
            for _ in range(C.HEDGE_LOSSES_TO_EJECT):  # one at a time: A gets every other (ties go to A first)
                await asyncio.gather(pool.call(score), pool.call(score))
            assert pool.hedges_won >= 1
            # out for losing its hedges, or for its silence while B answers (both rules see a server this slow)
            assert pool.taken_out and all(said.startswith(A) for said in pool.taken_out)
            return time.monotonic() - start

    assert asyncio.run(go()) < 3.0  # far from A's 5 s each
    assert hosts.cancelled["a.test"] >= 1


def test_hedges_go_through_the_rate_limit_and_keep_each_endpoints_concurrency():
    entered = Counter()

    class Counting:
        async def __aenter__(self) -> None:
            entered["requests"] += 1

        async def __aexit__(self, *exc: object) -> None:
            return None

    hosts = Hosts(delay=0.01)

    async def go() -> None:
        async with pool_of(hosts, [A, B, D], concurrency=2, throttle=Counting()) as pool:
            hosts.frozen.add("a.test")
            await asyncio.gather(*(pool.call(score) for _ in range(60)))
            assert entered["requests"] == sum(pool.requests_sent().values())  # every request, hedges included

    asyncio.run(go())
    assert max(hosts.peak.values()) <= 2


# --- a prompt's requests on one endpoint --------------------------------------------------------------------------


def test_a_pinned_prompts_requests_stay_on_one_endpoint_and_a_lost_pin_is_said():
    hosts = Hosts(delay=0.005)

    async def go() -> None:
        async with pool_of(hosts, [A, B], concurrency=8) as pool:
            for _ in range(10):
                with pinning.pinned(), provenance.collect() as answers:
                    await asyncio.gather(*(pool.call(score) for _ in range(6)))
                assert len(answers.by) == 1  # one endpoint answered the whole prompt
            with pinning.pinned() as pin:
                await pool.call(score)
                pool.take_out(state(pool, pin.urls["reward"]).endpoint, "for the test")
                with pytest.raises(PinBroken):
                    await pool.call(score)

    asyncio.run(go())


def test_per_unit_answerers_and_cross_release_prompts():
    """Units tagged by the model kind get their own answerers; a prompt whose one role was answered by two releases
    is cross-release."""
    a = provenance.Answerer(role="reward", url=A, release="0.32.0")
    b = provenance.Answerer(role="reward", url=B, release="0.33.0")
    answers = provenance.Answers()

    async def answered(by: provenance.Answerer) -> None:
        answers.add(by)

    async def tagged() -> None:
        await asyncio.gather(provenance.for_units([0], answered(a)), provenance.for_units([1], answered(b)))

    asyncio.run(tagged())
    line = provenance.by_unit([provenance.record(answers.of(0, None)), provenance.record(answers.of(1, None))])
    assert [(x["url"], x["units"]) for x in line] == [(A, [0]), (B, [1])]
    assert provenance.cross_release(line)
    same = provenance.by_unit([provenance.record(frozenset({a}))] * 2)
    assert same == ({"role": "reward", "url": A, "release": "0.32.0", "units": [0, 1]},)
    assert not provenance.cross_release(same)
    assert provenance.tally([line, same]) == [
        {"role": "reward", "url": A, "release": "0.32.0", "prompts": 2},
        {"role": "reward", "url": B, "release": "0.33.0", "prompts": 1},
    ]


def test_the_end_of_scoring_check_does_not_wait_for_a_frozen_member():
    """The last identity check of every member at work: one still silent long after the others answered is not
    judged (as one that cannot be asked), instead of holding the run's end for its read timeout."""
    from rmbench_client.pool.vouching import vouch_at_end

    class Checks:
        async def recheck(self, ep: Any) -> dict[str, str]:
            if ep.url == A:
                await asyncio.sleep(3600)  # frozen
            return {"version": "0.33.0"}

    async def go() -> float:
        async with pool_of(Hosts(), [A, B]) as pool:
            start = time.monotonic()
            assert await vouch_at_end(Checks(), pool._states) == []  # nobody found serving another model
            assert state(pool, B).answerer.release == "0.33.0" and state(pool, A).answerer.release is None
            return time.monotonic() - start

    assert asyncio.run(go()) < 2.0  # the floor (0.3 s here), not the frozen member's hour
