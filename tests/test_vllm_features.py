"""The route list of a real vLLM 0.32.0 reward server and policy server (tests/recorded/routes-vllm-0.32.0.json,
recorded from servers of .venv-server) read through the client's start-up hints, and release numbers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from helpers_http import Recorder, endpoint

from rmbench_client.backends.vllm_features import Routes, release, routes_from, served_routes

RECORDED = json.loads((Path(__file__).parent / "recorded" / "routes-vllm-0.32.0.json").read_text())


def test_release_parsing():
    assert release("0.13.0") == (0, 13, 0)
    assert release("0.20.2+cpu") == (0, 20, 2)
    assert release("0.11.0rc1") == (0, 11, 0)
    assert release("dev") is None and release(None) is None
    # PEP 440 as packaging reads it (a declared dependency): a "v" prefix, epochs, dev and post releases
    assert release("v0.20.2") == (0, 20, 2) and release("1!0.13.0.dev3") == (0, 13, 0)
    assert release("0.26.0.post1+cu128") == (0, 26, 0)
    import tomllib

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    assert any(d.startswith("packaging") for d in tomllib.loads(pyproject.read_text())["project"]["dependencies"])


def test_runner_mismatch_routes():
    """0.32 lists only its runner's routes: a reward model on the generate runner has no /pooling, a policy on the
    pooling runner no /v1/completions (what the start-up checks name, with the flags to serve it right)."""
    reward = routes_from(RECORDED["answers"]["/openapi.json"])
    policy = routes_from({"paths": dict.fromkeys(RECORDED["policy_openapi_paths"], {})})
    assert reward.lacks("/v1/completions") and not reward.lacks("/pooling")
    assert policy.lacks("/pooling") and not policy.lacks("/v1/completions")


def test_unknown_routes_conclude_nothing():
    """A server without /openapi.json (404): nothing is concluded."""

    async def go() -> Routes:
        transport = Recorder(lambda request: httpx.Response(404, json={"detail": "Not Found"}))
        async with httpx.AsyncClient(transport=transport) as client:
            return await served_routes(endpoint("http://rm.test", "rm", client))

    routes = asyncio.run(go())
    assert routes == Routes() and not routes.lacks("/pooling")
