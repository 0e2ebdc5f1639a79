"""PPE Preference and PPE Correctness through real vLLM CPU servers, on fixtures in the hub datasets' schemas: the
tiny reward model's rewards and the tiny DPO pair's implicit rewards equal transformers' in-process computation on
every answer (a best-of-K row's 32 included); a judge is asked exactly the battles or the sampled conflict pairs;
every run re-scores through `score` to the same numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CpuServers, transformers_reference
from helpers_cli import rescored
from ppe_fixture import K, battle, best_of_k, write_correctness, write_preference

from rmbench_client.config.schema import RunConfig
from rmbench_client.model_kinds.dpo import reduce
from rmbench_client.run.runner import run

pytestmark = pytest.mark.server

BATTLES = [
    battle("p1", "model_a", "Paris is the capital of France.", "Lyon.", hard_prompt=True),
    battle("p2", "model_b", "I am not sure.", "Seven is a prime number.", language="Chinese", is_code=True),
    battle("p3", "tie", "Blue.", "Green."),
]
ANSWERS = ["The answer is 4.", "Four.", "The answer is 5.", "I think 22."]
ROWS = {  # one row of 32 answers per set: two correct, the rest wrong; a few sampled pairs each
    name: [best_of_k(name, 0, [f"{a} ({name})" for a in ANSWERS], [True, True, False, False], [[0, 2], [3, 1], [1, 9]])]
    for name in ("mmlu_pro", "math", "gpqa", "ifeval", "mbpp_plus")
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ppe")
    write_preference(root / "pref", BATTLES)
    return {"ppe-preference": root / "pref", "ppe-correctness": write_correctness(root / "corr", ROWS)}


def texts(bench: str) -> list[list[str]]:
    """Every (prompt, answer) the benchmark scores, in the order of its per-sample lines' scores."""
    if bench == "ppe-preference":
        decisive = [b for b in BATTLES if not b["winner"].startswith("tie")]
        return [[b["prompt"], b[k]] for b in decisive for k in ("response_1", "response_2")]
    return [[r["prompt"], r[f"response_{i}"]] for name in sorted(ROWS) for r in ROWS[name] for i in range(1, K + 1)]


def scores(bench: str, lines: list[dict]) -> list[float]:
    if bench == "ppe-preference":
        return [v for x in lines for v in (x["score_1"], x["score_2"])]
    return [x[f"score_{i}"] for x in sorted(lines, key=lambda x: x["set"]) for i in range(1, K + 1)]


@pytest.fixture(scope="module")
def reference(cpu_servers: CpuServers) -> dict[str, dict[str, Any]]:
    return {b: transformers_reference(cpu_servers.models_dir, texts(b)) for b in ("ppe-preference", "ppe-correctness")}


def config(servers: CpuServers, tmp_path: Path, bench: str, data: dict[str, Path], **update: Any) -> RunConfig:
    base = {**servers.config.to_data(), "out": str(tmp_path / "run"), "benchmark": bench, "data": str(data[bench])}
    return RunConfig.from_data({**base, **update})


def numbers(summary: dict) -> dict:
    keep = ("accuracy", "categories", "category_n", "sets", "pairs", "best_of_k", "ci")
    return {k: summary[k] for k in keep if k in summary}


@pytest.mark.parametrize("bench", ["ppe-preference", "ppe-correctness"])
@pytest.mark.parametrize("kind", ["reward", "dpo"])
def test_ppe_through_real_servers_equals_transformers(cpu_servers, data, reference, tmp_path, bench, kind):
    update = (
        {"type": "dpo", "model": "tiny-dpo", "dpo": {"reward": "ratio", "template": "auto"}} if kind == "dpo" else {}
    )
    result = run(config(cpu_servers, tmp_path, bench, data, **update), progress=False)
    assert result.all_scored and result.summary["complete"] is True
    lines = [json.loads(x) for x in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    ref = reference[bench]
    if kind == "reward":
        expected = ref["reward"]
    else:
        expected = [reduce("ratio", p, r) for p, r in zip(ref["policy"], ref["reference"], strict=True)]
    got = scores(bench, lines)
    assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) <= (1e-4 if kind == "reward" else 1e-3)
    if bench == "ppe-preference":
        assert result.summary["unscored"]["records"] == 1
        chosen_wins = [(x["score_1"] > x["score_2"]) == (x["winner"] == "model_a") for x in lines]
        assert result.summary["accuracy"] == pytest.approx(sum(chosen_wins) / len(chosen_wins))
    else:
        for x in lines:  # each row's accuracy over its sampled pairs, from its own scores
            won = [x[f"score_{c + 1}"] > x[f"score_{r + 1}"] for c, r in x["sampled_conflict_pairs"]]
            assert x["accuracy"] == pytest.approx(sum(won) / len(won))
        assert len(result.summary["best_of_k"]["math"]["curve"]) == K
    assert numbers(rescored(result.out_dir)) == numbers(result.summary)


@pytest.mark.parametrize("bench", ["ppe-preference", "ppe-correctness"])
def test_a_judge_is_asked_the_battles_or_the_sampled_pairs_only(cpu_servers, data, tmp_path, bench):
    """The tiny policy as a judge (its 4-token answers hold no verdict: every comparison is credited 1/2): one
    question per decisive battle; per best-of-K row one per sampled pair, not one per correct-incorrect pair."""
    judge = {**cpu_servers.config.roles["policy"].to_data(), "serve": None}
    cfg = config(cpu_servers, tmp_path, bench, data, model="tiny-judge", type="judge", roles={"judge": judge},
                 judge={"max_tokens": 4})  # fmt: skip
    result = run(cfg, progress=False)
    assert result.all_scored
    lines = [json.loads(x) for x in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    asked = [len(x["details"]["answers"]) for x in lines]
    assert asked == ([1, 1] if bench == "ppe-preference" else [3] * 5)
    assert all(v == 0.5 for x in lines for v in x["results"]) and result.summary["accuracy"] == 0.5
    assert "best_of_k" not in result.summary  # pairs only: no answer's own score
    assert numbers(rescored(result.out_dir)) == numbers(result.summary)
