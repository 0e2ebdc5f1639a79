"""Generative judges: verdict parsing and errors on recorded OpenAI-shaped answers; the request path on a real
vLLM server (the tiny policy model as the judge)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers_data import require_rmbench
from helpers_http import completion, endpoint

from rmbench_client.config.schema import JudgeOptions, RunConfig
from rmbench_client.errors import EndpointError, RetryableError, SampleError, ShapeError
from rmbench_client.model_kinds.judge import ask as ask_judge
from rmbench_client.model_kinds.judge import credit, credit_both, parse_rating
from rmbench_client.model_kinds.judge_answers import answer_text
from rmbench_client.model_kinds.judge_prompts import last_verdict as parse_verdict
from rmbench_client.run.runner import run

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


def ask(handler) -> dict:
    async def go() -> dict:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            ep = endpoint("http://judge.test", "judge", client, {"Authorization": "Bearer k"})
            return await ask_judge(ep, [{"role": "user", "content": "q"}], JudgeOptions(max_tokens=8), {})

    return asyncio.run(go())


def test_judge_request_and_answer():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content), auth=request.headers["authorization"], path=request.url.path)
        return httpx.Response(200, json=completion("Answer B misses the point. [[A]]"))

    answer = ask(handler)
    assert parse_verdict(answer_text(answer["samples"][0])) == "A"
    assert answer["usage"] == {"prompt": 10, "completion": 5, "reasoning": None} and answer["seconds"] > 0
    assert seen["path"] == "/v1/chat/completions" and seen["temperature"] == 0.0 and seen["max_tokens"] == 8
    assert seen["auth"] == "Bearer k" and seen["model"] == "judge"


@pytest.mark.parametrize(
    ("body", "error", "says"),
    [
        (b"<html>Bad Gateway</html>", ShapeError, "answer is not JSON"),
        (b'{"choices": [', ShapeError, "answer is not JSON"),
        ({"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]}, ShapeError, "choices.0.message"),
        ({"id": "x", "object": "chat.completion"}, ShapeError, "choices"),
        ({"error": {"message": "no such model", "code": 400}}, SampleError, "error answer (code 400): no such model"),
        ({"error": {"message": "busy", "code": "503"}}, RetryableError, "busy"),
        ({"object": "error", "message": "bad key", "code": 401}, EndpointError, "bad key"),
        ({"error": "rate limited"}, SampleError, "rate limited"),
    ],
)
def test_an_answer_that_is_no_answer_is_an_error_never_a_verdict(body, error, says):
    """HTTP 200 with a body that is no chat completion: the error the pool retries or the prompt fails with."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(error, match=re.escape(says)) as raised:
        ask(lambda request: httpx.Response(200, content=content, headers={"content-type": "application/json"}))
    assert type(raised.value) is error


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
    [warning] = result.summary["warnings"]  # 8 tokens: cut off, or ended without a verdict
    assert warning.startswith(f"{answers} judge answer(s) held no verdict (") and warning.endswith("): scored 0.5")
    assert result.summary["judge_cost"]["total"]["requests"] == answers  # every stored verdict's cost
    assert result.summary["judge_cost"]["total"]["prompt_tokens"] > 0
    details = json.loads((result.out_dir / "samples.jsonl").read_text().splitlines()[0])["details"]["answers"]
    assert len(details) == 9 and all(isinstance(a, list if order == "both" else str) for a in details)
    lines = [json.loads(line) for line in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["results"] == [[0.5] * 3] * 3
    rescored = subprocess.run([CLI, "score", str(result.out_dir / "samples.jsonl"), "--json"], capture_output=True)
    assert rescored.returncode == 0 and json.loads(rescored.stdout)["overall"] == result.summary["overall"]


@pytest.fixture(scope="module")
def thinking_judge(tmp_path_factory) -> Iterator[str]:
    """vLLM CPU serving the tiny Qwen3-family policy (servers/build_families.py: its tokenizer holds `<think>` and
    `</think>`) with vLLM's deepseek_r1 reasoning parser, which takes what comes before a `</think>` as thinking:
    the random model never writes one, so every answer it gives is thinking, cut off at max_tokens."""
    from conftest import REPO, SERVER_PYTHON, ensure_server_side, port

    from rmbench_client.launcher import start_servers, stop_servers

    ensure_server_side()
    models = tmp_path_factory.mktemp("thinking-judge")
    build = "import sys; from pathlib import Path; from build_families import build_family; "
    build += "build_family('qwen3', Path(sys.argv[1]))"
    subprocess.run([str(SERVER_PYTHON), "-c", build, str(models)], cwd=REPO / "servers", check=True)
    url = f"http://127.0.0.1:{port(81)}"
    serve = {"engine": "vllm-cpu", "path": str(models / "qwen3" / "policy"), "dtype": "float32",
             "max_model_len": 4096, "extra_args": ["--reasoning-parser", "deepseek_r1"]}  # fmt: skip
    role = {"served_model": "think", "endpoints": [url], "serve": serve}
    cfg = RunConfig.from_data({"model": "thinking-judge", "type": "judge", "roles": {"judge": role}})
    state = tmp_path_factory.mktemp("thinking-judge-server")
    start_servers(cfg, repo_root=REPO, state_dir=state)
    try:
        yield url
    finally:
        stop_servers(state)


@pytest.mark.server
def test_a_judge_cut_off_while_thinking_on_a_real_vllm_server(thinking_judge, tmp_path):
    """vLLM's own split answer (`reasoning`, `content` null, finish_reason length): no verdict, counted as cut off
    while thinking, not as no verdict given; the answer shown is empty; the server's token counts recorded."""
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "prompt": f"Question {i}? Say [[A]] or [[B]].",
                                        "chosen": "Four.", "rejected": "Five."}) + "\n" for i in range(3)))  # fmt: skip
    cfg = RunConfig.from_data({
        "model": "thinking-judge", "type": "judge", "benchmark": "pairwise", "data": str(data),
        "out": str(tmp_path / "run"), "roles": {"judge": {"served_model": "think", "endpoints": [thinking_judge]}},
        "judge": {"max_tokens": 12, "order": "both"},
    })  # fmt: skip
    result = run(cfg, progress=False)
    assert result.all_scored and result.summary["accuracy"] == 0.5
    assert result.summary["warnings"] == [
        "6 judge answer(s) held no verdict (cut off at judge.max_tokens 12: 6, 6 of them while thinking; none "
        "given: 0): scored 0.5"
    ]
    lines = [json.loads(x) for x in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    records = [r for line in lines for r in line["details"]["judgements"][0]]
    assert [r["cut_off"] for r in records] == ["thinking"] * 6 and all(r["verdict"] is None for r in records)
    assert all(a == "" for line in lines for a in line["details"]["answers"][0])  # all of it was thinking
    # vLLM counts only thinking after a <think> the model wrote: here uncounted (null), never called answer
    assert all(r["prompt_tokens"] > 10 and r["reasoning_tokens"] is None and r["answer_tokens"] is None
               for r in records)  # fmt: skip
    assert result.summary["judge_cost"]["total"]["prompt_tokens"] == sum(r["prompt_tokens"] for r in records)
