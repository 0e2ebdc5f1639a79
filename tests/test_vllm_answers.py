"""vLLM's answers parsed into typed models (MockTransport): pooling shapes, prompt log-probs by token id, tokenize;
shape errors name the endpoint and field and are never retried; a non-finite value is the sample's failure."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import random
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from helpers_http import Recorder, endpoint

import rmbench_client.pool.endpoint_pool as scheduler
from rmbench_client.backends.base import Endpoint
from rmbench_client.backends.transport import decode_json
from rmbench_client.backends.vllm import VllmLogprobs, VllmReward, generate_logprobs, token_logprobs
from rmbench_client.errors import SampleError, ShapeError
from rmbench_client.pool.endpoint_pool import EndpointPool

URL = "http://rm.test"


@pytest.fixture
def no_backoff(monkeypatch) -> list[float]:
    chosen: list[float] = []

    def instant(attempt: int, retry_after: float | None = None) -> float:
        chosen.append(0.0)
        return 0.0

    monkeypatch.setattr(scheduler, "retry_delay", instant)
    return chosen


# --- vLLM response parsing ---------------------------------------------------------------------------------------


async def _with_endpoint(handler: Callable[[httpx.Request], httpx.Response], fn: Callable[[Endpoint], Any]) -> Any:
    transport = Recorder(handler)
    async with httpx.AsyncClient(transport=transport) as client:
        result = await fn(endpoint(URL, "rm", client))
    assert transport.all_closed()
    return result, transport.requests


def answer(body: Any = None, raw: bytes | None = None) -> Callable[[httpx.Request], httpx.Response]:
    if raw is not None:
        return lambda request: httpx.Response(200, content=raw, headers={"content-type": "application/json"})
    return lambda request: httpx.Response(200, json=body)


CONV = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


@pytest.mark.parametrize(
    ("data", "expected"),
    [(1.5, [1.5]), ([1.5], [1.5]), ([[1.5]], [1.5]), ([[0.25, -2.0]], [0.25, -2.0]), ([3, 4], [3.0, 4.0])],
)
def test_pooling_shapes(data, expected):
    result, requests = asyncio.run(
        _with_endpoint(
            answer({"data": [{"index": 0, "data": data}]}), lambda ep: VllmReward().rewards_for_messages(ep, CONV)
        )
    )
    assert result == expected
    sent = json.loads(requests[0].content)
    assert requests[0].url.path == "/pooling"
    assert sent["messages"] == CONV and sent["model"] == "rm" and sent["use_activation"] is False


def test_pooling_batch_of_ids():
    body = {"data": [{"data": [[1.0]]}, {"data": [[2.0]]}]}
    result, requests = asyncio.run(
        _with_endpoint(answer(body), lambda ep: VllmReward().rewards_for_inputs(ep, [[1, 2], [3]]))
    )
    assert result == [[1.0], [2.0]]
    assert json.loads(requests[0].content)["input"] == [[1, 2], [3]]


@pytest.mark.parametrize("raw", [b'{"data": [{"data": NaN}]}', b'{"data": [{"data": [[Infinity]]}]}'])
def test_pooling_non_finite_is_sample_error(raw):
    with pytest.raises(SampleError, match="non-finite"):
        asyncio.run(_with_endpoint(answer(raw=raw), lambda ep: VllmReward().rewards_for_messages(ep, CONV)))


@pytest.mark.parametrize(
    "body",
    [
        {"data": [{"data": "x"}]},
        {"data": [{"data": []}]},
        {"data": [{"data": True}]},
        {"data": []},
        {"object": "error"},
    ],
)
def test_pooling_malformed_is_a_shape_error_naming_the_field(body):
    with pytest.raises(ShapeError, match=r"http://rm.test/pooling: unexpected answer: (field data|0 results)"):
        asyncio.run(_with_endpoint(answer(body), lambda ep: VllmReward().rewards_for_messages(ep, CONV)))


def test_malformed_pooling_answer_fails_without_retries(no_backoff):
    """Deterministic: the same request would get the same answer; the endpoint stays in. The first malformed answer
    of a run is asked once more as vLLM 0.13 needs it (`task: classify`), never again after that."""
    transport = Recorder(lambda request: httpx.Response(200, json={"data": [{"data": "x"}]}))

    async def go() -> EndpointPool:
        backend = VllmReward()
        async with httpx.AsyncClient(transport=transport) as client:
            pool = EndpointPool("reward", [endpoint(URL, "rm", client)], eject_after=1)
            try:
                for _ in range(2):
                    with pytest.raises(ShapeError, match="field data.0.data"):
                        await pool.call(lambda ep: backend.rewards_for_messages(ep, CONV))
            finally:
                await pool.aclose()
            return pool

    pool = asyncio.run(go())
    assert len(transport.requests) == 3 and pool.retries == 0 and no_backoff == []
    tasks = [json.loads(r.content).get("task") for r in transport.requests]
    assert tasks == [None, "classify", None] and all(s.healthy for s in pool._states)


def test_vllm_013_token_level_pooling_answer_is_asked_again_as_classify():
    """vLLM 0.13 runs /pooling without a task as token_classify (one value per token); with `task: classify` it
    answers the sequence's value, and every later request of the run carries the task."""

    def answer(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content).get("task") == "classify":
            return httpx.Response(200, json={"data": [{"index": 0, "data": [0.75]}]})
        return httpx.Response(200, json={"data": [{"index": 0, "data": [[0.1], [0.2], [0.3]]}]})

    transport = Recorder(answer)

    async def go() -> list[list[float]]:
        backend = VllmReward()
        async with httpx.AsyncClient(transport=transport) as client:
            ep = endpoint(URL, "rm", client)
            return [await backend.rewards_for_messages(ep, CONV) for _ in range(2)]

    assert asyncio.run(go()) == [[0.75], [0.75]]
    assert [json.loads(r.content).get("task") for r in transport.requests] == [None, "classify", "classify"]


def test_pooling_wrong_count_is_a_shape_error():
    with pytest.raises(ShapeError, match="1 results for 2 inputs"):
        asyncio.run(
            _with_endpoint(
                answer({"data": [{"data": 1.0}]}), lambda ep: VllmReward().rewards_for_inputs(ep, [[1], [2]])
            )
        )


def _entry(token: int, logprob: float, **others: float) -> dict[str, Any]:
    out = {str(token): {"logprob": logprob, "rank": 3, "decoded_token": "t"}}
    out.update({k: {"logprob": v, "rank": 1, "decoded_token": "o"} for k, v in others.items()})
    return out


def test_prompt_logprobs_looked_up_by_token_id():
    # vLLM: first entry None; each dict holds the prompt token and may hold a more likely top-k token too.
    body = {
        "choices": [
            {"index": 1, "prompt_logprobs": [None, _entry(9, -0.75)]},
            {"index": 0, "prompt_logprobs": [None, _entry(20, -1.5, **{"7": -0.1}), _entry(30, -2.25, **{"31": -0.2})]},
        ]
    }
    result, requests = asyncio.run(
        _with_endpoint(answer(body), lambda ep: VllmLogprobs().prompt_logprobs(ep, [[10, 20, 30], [8, 9]]))
    )
    assert result == [[-1.5, -2.25], [-0.75]]
    sent = json.loads(requests[0].content)
    assert sent["prompt"] == [[10, 20, 30], [8, 9]] and sent["prompt_logprobs"] == 0 and sent["max_tokens"] == 1


@pytest.mark.parametrize(
    "entries",
    [
        [None, {"20": {"logprob": -1.0}}],  # one entry short
        [None, {"20": {"logprob": -1.0}}, {"30": {"logprob": -1.0}}, {"40": {"logprob": -1.0}}],  # one too many
        [None, {"21": {"logprob": -1.0}}, {"30": {"logprob": -1.0}}],  # token 20 absent
        None,
    ],
)
def test_prompt_logprobs_bad_entries_are_shape_errors(entries):
    body = {"choices": [{"index": 0, "prompt_logprobs": entries}]}
    with pytest.raises(ShapeError, match="/v1/completions: unexpected answer"):
        asyncio.run(_with_endpoint(answer(body), lambda ep: VllmLogprobs().prompt_logprobs(ep, [[10, 20, 30]])))


def test_prompt_logprobs_wrong_number_of_choices_is_a_shape_error():
    body = {"choices": [{"index": 0, "prompt_logprobs": [None, _entry(2, -1.0)]}]}
    with pytest.raises(ShapeError, match="1 choices for 2 prompts"):
        asyncio.run(_with_endpoint(answer(body), lambda ep: VllmLogprobs().prompt_logprobs(ep, [[1, 2], [1, 2]])))


def _generate(raw: bytes, ids: list[int]) -> list[float]:
    result, requests = asyncio.run(
        _with_endpoint(answer(raw=raw), lambda ep: VllmLogprobs().generate_logprobs(ep, ids))
    )
    sent = json.loads(requests[0].content)
    assert sent["token_ids"] == ids and sent["sampling_params"]["detokenize"] is False
    return result


def test_generate_answer_typed_decode_matches_the_general_path():
    # the shape vLLM 0.32 sends (fields before and after, rank and decoded_token per entry), 800 positions
    rng = random.Random(5)
    ids = [rng.randrange(32000) for _ in range(800)]
    entries = [None] + [
        {str(t): {"logprob": -8 * rng.random(), "rank": rng.randrange(1, 900), "decoded_token": None}} for t in ids[1:]
    ]
    entries[7] = _entry(ids[7], -0.5, **{"99999": -0.25})  # a more likely top-k token beside it
    body = {"request_id": "g", "usage": {"prompt_tokens": 800}, "prompt_logprobs": entries, "choices": [{"index": 0}]}
    raw = json.dumps(body, separators=(",", ":")).encode()
    got = _generate(raw, ids)
    assert (
        got == token_logprobs(ids, entries, "general path") == [next(iter(e.values()))["logprob"] for e in entries[1:]]
    )
    assert generate_logprobs(ids, raw, "x") == got


@pytest.mark.parametrize(
    ("entries", "error", "match"),
    [
        ([None, {"20": {"logprob": -1.0}}], ShapeError, "has 2 entries for 3 tokens"),
        ([None, {"21": {"logprob": -1.0}}, {"30": {"logprob": -1.0}}], ShapeError, "no log-prob for token 20"),
        ([None, None, {"30": {"logprob": -1.0}}], ShapeError, "no log-prob for token 20"),
        ([None, {"20": {"logprob": True}}, {"30": {"logprob": -1.0}}], ShapeError, "not a number"),
        ([None, {"20": {"logprob": "-1"}}, {"30": {"logprob": -1.0}}], ShapeError, "not a number"),
        ([None, {"20": {"logprob": 0.5}}, {"30": {"logprob": -1.0}}], ShapeError, "above 0"),
        ([None, {"20": {"logprob": -9999.0}}, {"30": {"logprob": -1.0}}], SampleError, "non-finite"),
        (None, ShapeError, "no entries"),
    ],
)
def test_generate_answer_errors_name_what_is_wrong(entries, error, match):
    raw = json.dumps({"prompt_logprobs": entries}).encode()
    with pytest.raises(error, match=match) as info:
        _generate(raw, [10, 20, 30])
    assert type(info.value) is error and "/inference/v1/generate" in str(info.value)


def test_generate_answer_nan_is_a_sample_error_and_malformed_json_fails_at_once():
    """A malformed body under HTTP 200 fails its prompt, never retried (a body cut off in transit fails its HTTP
    framing first, and that is retried: test_session)."""
    nan = b'{"prompt_logprobs": [null, {"2": {"logprob": NaN}}]}'
    with pytest.raises(SampleError, match="non-finite log-prob"):
        _generate(nan, [1, 2])
    with pytest.raises(ShapeError, match="answer is not JSON"):
        _generate(b'{"prompt_logprobs": [null, {"2": {"logp', [1, 2])


def test_reading_a_long_answer_sets_off_no_collection_and_leaves_the_collector_as_it_was():
    """Thousands of short-lived dicts per answer: the cycle collector stays off while they live (a fifth of a
    DPO run's client CPU went to collections), and is on again afterwards, also after an error."""
    ids = list(range(1, 5001))
    entries = [None] + [{str(t): {"logprob": -1.0, "rank": 1, "decoded_token": None}} for t in ids[1:]]
    raw = json.dumps({"prompt_logprobs": entries}).encode()
    passes: list[int] = []
    record = lambda phase, info: passes.append(info["generation"]) if phase == "start" else None  # noqa: E731
    gc.collect()
    gc.callbacks.append(record)
    try:
        assert generate_logprobs(ids, raw, "x") == [-1.0] * 4999
    finally:
        gc.callbacks.remove(record)
    assert passes == [] and gc.isenabled()
    with pytest.raises(ShapeError):
        generate_logprobs([1, 2], b'{"prompt_logprobs": [null, {"2": {"logprob": 3.0}}]}', "x")
    assert gc.isenabled()
    gc.disable()  # a caller that turned it off keeps it off
    try:
        generate_logprobs(ids, raw, "x")
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("value", [b"NaN", b"-Infinity"])
def test_prompt_logprobs_non_finite_is_a_sample_error(value):
    raw = b'{"choices": [{"index": 0, "prompt_logprobs": [null, {"2": {"logprob": ' + value + b"}}]}]}"
    with pytest.raises(SampleError, match="non-finite log-prob") as info:
        asyncio.run(_with_endpoint(answer(raw=raw), lambda ep: VllmLogprobs().prompt_logprobs(ep, [[1, 2]])))
    assert type(info.value) is SampleError  # recorded as the sample's failure, never stored


def test_tokenize_parsing():
    result, requests = asyncio.run(
        _with_endpoint(
            answer({"tokens": [1, 5, 9], "count": 3}),
            lambda ep: VllmLogprobs().tokenize(ep, CONV, add_generation_prompt=False),
        )
    )
    assert result == [1, 5, 9]
    assert json.loads(requests[0].content)["add_generation_prompt"] is False
    with pytest.raises(ShapeError, match="field tokens.0"):
        asyncio.run(
            _with_endpoint(
                answer({"tokens": ["a"]}), lambda ep: VllmLogprobs().tokenize(ep, CONV, add_generation_prompt=True)
            )
        )


def test_decode_json_reads_strict_json_fast_and_nan_as_the_stdlib_does() -> None:
    entries = [None] + [{str(t): {"logprob": -t / 7, "rank": 1, "decoded_token": "é"}} for t in range(1, 500)]
    raw = json.dumps({"choices": [{"index": 0, "prompt_logprobs": entries}]}).encode()
    assert decode_json(raw) == json.loads(raw)
    assert math.isnan(decode_json(b'{"data": NaN}')["data"])
    with pytest.raises(json.JSONDecodeError):
        decode_json(b"<html>busy</html>")


def test_render_ids_falls_back_to_tokenize_where_render_is_missing():
    """vLLM 0.13 serves /inference/v1/generate but not /v1/completions/render (404): the ids come from /tokenize,
    one text per request, and render is not asked again."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/completions/render":
            return httpx.Response(404, json={"detail": "Not Found"})
        prompt = json.loads(request.content)["prompt"]
        return httpx.Response(200, json={"tokens": [len(prompt), 7], "count": 2, "max_model_len": 64})

    transport = Recorder(answer)

    async def go() -> list[list[list[int]]]:
        backend = VllmLogprobs()
        async with httpx.AsyncClient(transport=transport) as client:
            ep = endpoint(URL, "pi", client)
            return [await backend.render_ids(ep, ["ab", "abcd"]) for _ in range(2)]

    assert asyncio.run(go()) == [[[2, 7], [4, 7]]] * 2
    assert [r.url.path for r in transport.requests].count("/v1/completions/render") == 1
