"""Generative judges: verdict parsing and errors on recorded OpenAI-shaped answers; the request path on a real
vLLM server (the tiny policy model as the judge)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from helpers_data import require_rmbench
from helpers_http import completion, endpoint

from rmbench_client.config import JudgeOptions, RunConfig
from rmbench_client.errors import EndpointError, RetryableError, SampleError
from rmbench_client.model_kinds.judge import ask as ask_judge
from rmbench_client.model_kinds.judge import credit, credit_both, parse_rating
from rmbench_client.model_kinds.judge_prompts import last_verdict as parse_verdict
from rmbench_client.runner import run

CLI = str(Path(sys.executable).with_name("rmbench-client"))


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("A is more accurate.\n[[A]]", "A"),
        ("Both fine... on balance [[ B ]]", "B"),
        ("first [[A]] then, on reflection, [[B]]", "B"),
        ("A tie: [[C]]", "C"),
        ("I think A is better.", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_verdict(text, verdict):
    assert parse_verdict(text) == verdict


def test_credit_follows_the_order_shown():
    assert credit("A", swapped=False) == 1.0 and credit("B", swapped=False) == 0.0
    assert credit("B", swapped=True) == 1.0 and credit("A", swapped=True) == 0.0
    assert credit("C", swapped=False) == credit(None, swapped=True) == 0.5


def test_both_orders_credit_only_consistent_verdicts():
    # first: chosen shown as A; second: chosen shown as B
    assert credit_both("A", "B") == 1.0  # chosen wins both times
    assert credit_both("B", "A") == 0.0  # rejected wins both times
    assert credit_both("A", "A") == 0.5  # position bias: the first answer wins whatever it is
    assert credit_both("A", None) == credit_both("C", "B") == 0.5


@pytest.mark.parametrize(
    ("text", "rating"),
    [("Clear and correct.\n9", 9), ("Rating: 10", 10), ("score 7 out of 10, so 6", 6), ("7.", None), ("", None)],
)
def test_parse_rating(text, rating):
    assert parse_rating(text) == rating


def ask(handler) -> str | None:
    async def go() -> str | None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            ep = endpoint("http://judge.test", "judge", client, {"Authorization": "Bearer k"})
            return await ask_judge(ep, [{"role": "user", "content": "q"}], JudgeOptions(max_tokens=8), {})

    return asyncio.run(go())


def test_judge_request_and_answer():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content), auth=request.headers["authorization"], path=request.url.path)
        return httpx.Response(200, json=completion("Answer B misses the point. [[A]]"))

    assert parse_verdict(ask(handler)) == "A"
    assert seen["path"] == "/v1/chat/completions" and seen["temperature"] == 0.0 and seen["max_tokens"] == 8
    assert seen["auth"] == "Bearer k" and seen["model"] == "judge"


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, RetryableError), (503, RetryableError), (500, RetryableError), (400, SampleError), (404, EndpointError)],
)
def test_judge_errors(status, error):
    body = {"error": {"message": "nope", "type": "BadRequestError", "code": status}}
    with pytest.raises(error):
        ask(lambda request: httpx.Response(status, json=body))


@pytest.mark.server
@pytest.mark.parametrize(("order", "prompt"), [("random", "project"), ("both", "reward-bench")])
def test_judge_through_a_real_vllm_server(cpu_servers, tmp_path, order, prompt):
    """The tiny policy model as a judge, with the project's prompts or reward-bench's: requests go through, its
    answers hold no verdict, so every comparison scores 0.5 and is counted; the per-sample file re-scores to the
    same summary; the summary names the prompts."""
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text())
    records.sort(key=lambda r: len(r["prompt"]) + sum(len(x) for x in r["chosen"] + r["rejected"]))
    data = tmp_path / "chat_filtered.json"
    data.write_text(json.dumps(records[:2]))
    base = cpu_servers.config.to_data()
    judge_role = {**base["roles"]["policy"], "serve": None}
    cfg = RunConfig.from_data(
        {
            **base,
            "model": "tiny-judge",
            "type": "judge",
            "roles": {"judge": judge_role},
            "judge": {"max_tokens": 8, "order": order, "prompt": prompt},
            "data": str(data),
            "out": str(tmp_path / "run"),
        }
    )
    result = run(cfg, progress=False)
    pairs = {(r["prompt"], c, j) for r in records[:2] for c in r["chosen"] for j in r["rejected"]}
    assert result.all_scored and result.sent_sequences == len(pairs)  # each distinct comparison asked once
    assert result.summary["identity"]["prompt"] == ("reward-bench 0.1.4" if prompt == "reward-bench" else prompt)
    chat = result.summary["domains"]["chat"]
    assert chat["easy"] == chat["normal"] == chat["hard"] == 0.5
    answers = 18 * (2 if order == "both" else 1)  # both orders: every pair asked twice
    assert result.summary["warnings"] == [f"{answers} judge answer(s) held no verdict and were scored 0.5"]
    details = json.loads((result.out_dir / "samples.jsonl").read_text().splitlines()[0])["details"]["answers"]
    assert len(details) == 9 and all(isinstance(a, list if order == "both" else str) for a in details)
    lines = [json.loads(line) for line in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["results"] == [[0.5] * 3] * 3
    rescored = subprocess.run([CLI, "score", str(result.out_dir / "samples.jsonl"), "--json"], capture_output=True)
    assert rescored.returncode == 0 and json.loads(rescored.stdout)["overall"] == result.summary["overall"]
