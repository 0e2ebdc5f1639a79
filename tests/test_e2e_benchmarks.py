"""RewardBench 2, RewardBench with prior sets and a user's multi-turn preference data through real vLLM CPU
servers: reward model, DPO and judge. Multi-turn numbers equal transformers' in-process computation; every run
re-scores through `rmbench-client score` to the identical summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CpuServers, transformers_reference
from helpers_cli import rescored
from hub_schemas import (
    FILTERED_SCHEMA,
    PRIOR_SCHEMA,
    RB2_SCHEMA,
    filtered_record,
    hub_shard,
    prior_record,
    rb2_record,
    write_parquet,
)

from rmbench_client.config.schema import RunConfig
from rmbench_client.model_kinds.dpo import reduce
from rmbench_client.run.runner import run

pytestmark = pytest.mark.server

MULTI_TURN = [
    {
        "question": [
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4."},
            {"role": "user", "content": "And times 3?"},
        ],
        "good": "12.",
        "bad": "7.",
        "topic": "math",
    },
    {"question": "Name a prime number.", "good": "Seven.", "bad": "Nine.", "topic": "math"},
    {
        "question": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Capital of France?"},
        ],
        "good": "Paris.",
        "bad": "Lyon.",
        "topic": "geo",
    },
]


def config(servers: CpuServers, tmp_path: Path, **update: Any) -> RunConfig:
    return RunConfig.from_data({**servers.config.to_data(), "out": str(tmp_path / "run"), **update})


def numbers(summary: dict) -> dict:
    """The benchmark's own numbers, without the run's facts."""
    keep = ("subsets", "n", "score", "ties", "accuracy", "macro_accuracy", "sections", "ci")
    return {k: summary[k] for k in keep if k in summary}


@pytest.fixture(scope="module")
def multi_turn_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pairs") / "prefs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in MULTI_TURN))
    return path


@pytest.fixture(scope="module")
def transformers_multi_turn(cpu_servers: CpuServers) -> dict:
    pairs = [[r["question"], r[side]] for r in MULTI_TURN for side in ("good", "bad")]
    return transformers_reference(cpu_servers.models_dir, pairs)


FIELDS = {"prompt": "question", "chosen": "good", "rejected": "bad", "subset": "topic"}


@pytest.mark.parametrize("template", ["server", "auto"])
def test_multi_turn_user_data_through_the_reward_model(
    cpu_servers, multi_turn_file, transformers_multi_turn, tmp_path, template
):
    cfg = config(
        cpu_servers,
        tmp_path,
        benchmark="pairwise",
        data=str(multi_turn_file),
        data_fields=FIELDS,
        reward={"template": template},
    )
    result = run(cfg, progress=False)
    assert result.all_scored and result.summary["complete"] is True
    lines = [json.loads(x) for x in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    got = [v for line in lines for v in (line["score_chosen"], line["score_rejected"])]
    assert max(abs(a - b) for a, b in zip(got, transformers_multi_turn["reward"], strict=True)) <= 1e-4
    assert set(result.summary["subsets"]) == {"math", "geo"}
    assert numbers(rescored(result.out_dir)) == numbers(result.summary)


def test_multi_turn_user_data_through_dpo(cpu_servers, multi_turn_file, transformers_multi_turn, tmp_path):
    dpo = {"reward": "ratio", "template": "auto"}
    cfg = config(
        cpu_servers, tmp_path, benchmark="pairwise", type="dpo", model="tiny-dpo", dpo=dpo, data=str(multi_turn_file)
    )
    cfg = cfg.replace(data_fields=FIELDS)
    result = run(cfg, progress=False)
    assert result.all_scored
    lines = [json.loads(x) for x in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    got = [v for line in lines for v in (line["score_chosen"], line["score_rejected"])]
    ref = transformers_multi_turn
    expected = [reduce("ratio", p, r) for p, r in zip(ref["policy"], ref["reference"], strict=True)]
    assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) <= 1e-3
    assert set(lines[0]["details"]) == {"policy_logprob_sum", "reference_logprob_sum", "response_tokens"}


@pytest.fixture(scope="module")
def rb2_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One prompt of each subset, Ties as a ref/tied pair of one prompt number."""
    four = ["The right answer, stated plainly.", "A wrong answer.", "Another wrong one.", "Off topic entirely."]
    records = [
        rb2_record(f"{i}", subset, four[:1], four[1:], prompt=f"Question {i} for {subset}?")
        for i, subset in enumerate(("Factuality", "Precise IF", "Math", "Safety", "Focus"))
    ]
    records += [
        rb2_record("ref:7", "Ties", ["Red."], ["Blue.", "Green."], prompt="Name the colour of a ripe tomato."),
        rb2_record("tied:7", "Ties", ["Red.", "Crimson."], ["Blue.", "Green."], prompt="Name a colour of tomatoes."),
    ]
    return write_parquet(tmp_path_factory.mktemp("rb2") / "test-00000-of-00001.parquet", records, RB2_SCHEMA)


@pytest.mark.parametrize("kind", ["reward", "dpo"])
def test_rewardbench2_through_reward_and_dpo(cpu_servers, rb2_file, tmp_path, kind):
    extra = (
        {"type": "dpo", "model": "tiny-dpo", "dpo": {"reward": "ratio", "template": "auto"}} if kind == "dpo" else {}
    )
    cfg = config(cpu_servers, tmp_path, benchmark="reward-bench-2", data=str(rb2_file), **extra)
    result = run(cfg, progress=False)
    assert result.all_scored and result.summary["complete"] is True
    assert set(result.summary["subsets"]) == {"Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties"}
    line = json.loads((result.out_dir / "samples.jsonl").read_text().splitlines()[0])
    assert set(line) >= {"id", "subset", "scores", "num_correct"} and len(line["scores"]) == 4
    assert numbers(rescored(result.out_dir)) == numbers(result.summary)


def test_rewardbench2_through_a_rating_judge(cpu_servers, rb2_file, tmp_path):
    """The tiny policy as a judge: 4 tokens hold no 1-10 rating, so every answer is unrated (-1): each non-Ties
    prompt scores 1/4, as reward-bench scores a prompt without any valid rating; all are counted."""
    judge = {**cpu_servers.config.roles["policy"].to_data(), "serve": None}
    cfg = config(
        cpu_servers,
        tmp_path,
        benchmark="reward-bench-2",
        data=str(rb2_file),
        model="tiny-judge",
        type="judge",
        roles={"judge": judge},
        judge={"max_tokens": 4},
    )
    result = run(cfg, progress=False)
    assert result.all_scored
    summary = result.summary
    assert all(summary["subsets"][s] == 0.25 for s in ("Factuality", "Precise IF", "Math", "Safety", "Focus"))
    answers = 5 * 4 + 3 + 4
    assert summary["ratings"]["unparsed"] == answers
    assert any(f"{answers} judge answer(s) held no 1-10 rating" in w for w in summary["warnings"])
    assert numbers(rescored(result.out_dir)) == numbers(summary)


def test_rewardbench_with_prior_sets_through_the_reward_model(cpu_servers, tmp_path):
    root = tmp_path / "rb"
    write_parquet(
        hub_shard(root, "filtered"),
        [filtered_record(i, s, "A helpful answer.", "Bad.") for i, s in enumerate(("alpacaeval-easy", "hep-go"))],
        FILTERED_SCHEMA,
    )
    for split in ("anthropic_helpful", "shp"):
        turns = ["Hi, can you help?", "Sure.", "How do I boil an egg?"]
        write_parquet(
            hub_shard(root, split), [prior_record(1, turns, "Boil it 8 minutes.", "No.", split)], PRIOR_SCHEMA
        )
    result = run(config(cpu_servers, tmp_path, benchmark="reward-bench", data=str(root / "data")), progress=False)
    assert result.all_scored
    assert "Prior Sets" in result.summary["sections"] and result.summary["scored"] == 4
    assert numbers(rescored(result.out_dir)) == numbers(result.summary)
