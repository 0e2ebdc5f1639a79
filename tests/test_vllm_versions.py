"""Answers recorded from real servers of older vLLM releases (tests/recorded/vllm-<version>.json), replayed through
the client's parsing and feature detection. CI cannot afford those releases' environments; the live tests run
against the newest release (.venv-server)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from helpers_http import endpoint

from rmbench_client.backends.vllm import VllmLogprobs, VllmReward, server_version

RECORDED = Path(__file__).parent / "recorded"
URL = "http://vllm.test"


def replay(version: str) -> httpx.MockTransport:
    """Each request answered with the recorded answer of the same path and body (the task and all)."""
    answers = json.loads((RECORDED / f"vllm-{version}.json").read_text())["answers"]

    def handle(request: httpx.Request) -> httpx.Response:
        payload = json.loads(request.content) if request.content else None
        for a in answers:
            if a["path"] == request.url.path and a["method"] == request.method and a["request"] == payload:
                return httpx.Response(a["status"], json=a["body"])
        for a in answers:  # the same path with another body (e.g. other messages): the recorded shape
            if a["path"] == request.url.path and (a["request"] or {}).get("task") == (payload or {}).get("task"):
                return httpx.Response(a["status"], json=a["body"])
        return httpx.Response(404, json={"detail": "Not Found"})

    return httpx.MockTransport(handle)


def on(version: str, model: str, fn):  # noqa: ANN001, ANN201
    async def go():  # noqa: ANN202
        async with httpx.AsyncClient(transport=replay(version)) as client:
            return await fn(endpoint(URL, model, client))

    return asyncio.run(go())


MESSAGES = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there"}]


def test_vllm_013_reward_is_read_through_task_classify():
    """0.13 answers /pooling without a task with one value per token; the client asks again with the task."""
    recorded = json.loads((RECORDED / "vllm-0.13.0.json").read_text())["answers"]
    classify = next(a for a in recorded if (a["request"] or {}).get("task") == "classify")
    backend = VllmReward()
    assert (
        on("0.13.0", "tiny-reward", lambda ep: backend.rewards_for_messages(ep, MESSAGES))
        == classify["body"]["data"][0]["data"]
    )
    assert backend.task == {"task": "classify"}


def test_vllm_013_has_no_render_and_the_client_tokenizes_instead():
    backend = VllmLogprobs()
    assert on("0.13.0", "tiny-policy", lambda ep: backend.render_ids(ep, ["Hi"])) == [[45, 78]]
    assert backend.has_render is False


def test_the_server_version_is_read():
    assert on("0.13.0", "tiny-reward", server_version) == "0.13.0"


RECORDED_RELEASES = sorted(p.name.removeprefix("vllm-").removesuffix(".json") for p in RECORDED.glob("vllm-*.json"))


def one_value(answer: dict) -> list[float] | None:
    """The reward of a recorded /pooling answer that holds one value for the sequence, else None."""
    data = answer["body"].get("data") if answer["status"] == 200 else None
    values = data[0]["data"] if data else None
    return values if values and all(isinstance(v, float) for v in values) else None


def test_releases_are_recorded_by_make_compat():
    assert {"0.13.0", "0.32.0"} <= set(RECORDED_RELEASES)


@pytest.mark.parametrize("version", RECORDED_RELEASES)
def test_every_recorded_release_gives_its_reward_version_and_token_ids(version):
    """Whatever the release answers to /pooling, /v1/completions/render and /version, the client reads the
    sequence's one reward, the token ids and the version from it."""
    answers = json.loads((RECORDED / f"vllm-{version}.json").read_text())["answers"]
    rewards = [v for v in map(one_value, (a for a in answers if a["path"] == "/pooling")) if v]
    got = on(version, "tiny-reward", lambda ep: VllmReward().rewards_for_messages(ep, MESSAGES))
    assert got == rewards[0]
    tokens = next(a["body"]["tokens"] for a in answers if a["path"] == "/tokenize")
    assert on(version, "tiny-policy", lambda ep: VllmLogprobs().render_ids(ep, ["Hi"])) == [tokens]
    assert on(version, "tiny-reward", server_version).split("+")[0] == version


def test_the_releases_agree_on_the_reward_of_the_same_model_and_conversation():
    """The same tiny reward model on the same conversation: every recorded release's reward within 1e-5."""
    values = []
    for version in RECORDED_RELEASES:
        answers = json.loads((RECORDED / f"vllm-{version}.json").read_text())["answers"]
        values += [v[0] for v in map(one_value, (a for a in answers if a["path"] == "/pooling")) if v]
    assert len(values) >= len(RECORDED_RELEASES) and max(values) - min(values) <= 1e-5
