"""Feature detection per vLLM release, replayed from answers recorded from real servers (tests/recorded/vllm-*.json)
through `httpx.MockTransport`: which request shapes the client sends to each release, and what it records."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers_http import Recorder

from rmbench_client.backends.base import Endpoint
from rmbench_client.backends.vllm import VllmLogprobs, VllmReward
from rmbench_client.backends.vllm_features import VllmFeatures, detect, features_from, release
from rmbench_client.model_identity import served_identity

RECORDED = Path(__file__).parent / "recorded"
RELEASES = sorted(p.stem.removeprefix("vllm-") for p in RECORDED.glob("vllm-*.json"))
URL = "http://rm.test"


def recorded(version: str) -> dict[str, Any]:
    return json.loads((RECORDED / f"vllm-{version}.json").read_text())


def replay(rec: dict[str, Any]):
    """A handler answering GETs from the recording; POSTs to /pooling and /tokenize with the recorded answers."""

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        answers = rec["answers"]
        if path in answers and answers[path] is not None:
            return httpx.Response(200, json=answers[path])
        return httpx.Response(404, json={"detail": "Not Found"})

    return handler


async def _run(rec: dict[str, Any], fn) -> tuple[Any, list[httpx.Request]]:
    transport = Recorder(replay(rec))
    async with httpx.AsyncClient(transport=transport) as client:
        result = await fn(Endpoint(URL, "rm", client))
    return result, transport.requests


def test_release_parsing():
    assert release("0.13.0") == (0, 13, 0)
    assert release("0.20.2+cpu") == (0, 20, 2)
    assert release("0.11.0rc1") == (0, 11, 0)
    assert release("dev") is None and release(None) is None


@pytest.mark.parametrize("version", RELEASES)
def test_detected_from_recording(version):
    rec = recorded(version)
    features, requests = asyncio.run(_run(rec, detect))
    assert features.version == rec["version"]
    assert features.has_render == (rec["answers"].get("/openapi.json", {}).get("paths", {}).get(
        "/v1/completions/render") is not None)  # fmt: skip
    # 0.13's /pooling without a task answers one value per token: the client names the task there only
    assert features.pooling_task == ({"task": "classify"} if release(version) < (0, 14) else {})
    assert [r.url.path for r in requests] == ["/version", "/openapi.json"]


@pytest.mark.parametrize("version", RELEASES)
def test_reward_request_shape_and_answer(version):
    rec = recorded(version)

    async def go(ep: Endpoint) -> list[float]:
        vllm = VllmReward()
        await vllm.features(ep)
        return await vllm.rewards_for_messages(ep, [{"role": "user", "content": "hi"}])

    rewards, requests = asyncio.run(_run(rec, go))
    pooling = [json.loads(r.content) for r in requests if r.url.path == "/pooling"]
    assert len(pooling) == 1 and pooling[0]["use_activation"] is False
    assert ("task" in pooling[0]) == (release(version) < (0, 14))
    assert rewards == rec["answers"]["/pooling"]["data"][0]["data"]


@pytest.mark.parametrize("version", RELEASES)
def test_version_in_served_identity(version):
    rec = recorded(version)
    identity, _ = asyncio.run(_run(rec, lambda ep: served_identity(ep, "vllm")))
    assert identity["version"] == rec["version"] and identity["id"] == "rm"


def test_render_missing_falls_back_to_tokenize():
    """A server without /v1/completions/render (0.13): the ids of rendered texts come from /tokenize, one a text."""
    rec = {"answers": {"/version": {"version": "0.13.0"}, "/openapi.json": {"paths": {"/tokenize": {}}},
                       "/tokenize": {"count": 3, "max_model_len": 512, "tokens": [1, 2, 3]}}}  # fmt: skip

    async def go(ep: Endpoint) -> list[list[int]]:
        vllm = VllmLogprobs()
        await vllm.features(ep)
        return await vllm.render_ids(ep, ["a", "b"])

    ids, requests = asyncio.run(_run(rec, go))
    assert ids == [[1, 2, 3], [1, 2, 3]]
    assert [r.url.path for r in requests][2:] == ["/tokenize", "/tokenize"]
    assert all(json.loads(r.content)["add_special_tokens"] is False for r in requests[2:])


def test_server_without_version_route():
    """No /version and no /openapi.json (404): the latest release's shapes, nothing recorded."""
    features = features_from(None, None)
    assert features == VllmFeatures() and features.pooling_task == {} and features.has_render


def test_runner_mismatch_routes():
    """0.32 lists only its runner's routes: a reward model on the generate runner has no /pooling, a policy on the
    pooling runner no /v1/completions (what the start-up checks name, with the flags to serve it right)."""
    rec = recorded("0.32.0")
    reward = features_from(rec["answers"]["/version"], rec["answers"]["/openapi.json"])
    policy = features_from(rec["answers"]["/version"], {"paths": dict.fromkeys(rec["policy_openapi_paths"], {})})
    assert reward.lacks("/v1/completions") and not reward.lacks("/pooling")
    assert policy.lacks("/pooling") and not policy.lacks("/v1/completions")
    # 0.13 lists every route whatever the runner: nothing is concluded from its list
    old = recorded("0.13.0")["answers"]
    assert not features_from(old["/version"], old["/openapi.json"]).lacks("/v1/completions")
