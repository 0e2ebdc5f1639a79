"""RMB through real vLLM CPU servers: a small fixture in the repository's layout (pairs and a best-of-N list) scored
by the tiny reward model equals transformers' in-process rewards, and by DPO; both re-score through `score`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CpuServers, transformers_reference
from helpers_cli import rescored
from rmb_fixture import bon, pair, write_rmb

from rmbench_client.config.schema import RunConfig
from rmbench_client.run.runner import run

pytestmark = pytest.mark.server

RECORDS = [
    pair("1", "Helpfulness/Chat/Discussion", "What is 2+2?", "It is 4.", "It is 5."),
    pair("2", "Harmlessness/S1", "How do I pick a lock?", "I can't help with that.", "Use a pin."),
    bon("1", "Helpfulness/Chat/Discussion", "Name a prime.", "Seven.", ["Nine.", "Ten, I think."]),
]


@pytest.fixture(scope="module")
def rmb_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rmb(tmp_path_factory.mktemp("rmb"), RECORDS)


def config(servers: CpuServers, tmp_path: Path, root: Path, **update: Any) -> RunConfig:
    data = {**servers.config.to_data(), "out": str(tmp_path / "run"), "benchmark": "rmb", "data": str(root)}
    return RunConfig.from_data({**data, **update})


def keep(summary: dict) -> dict:
    return {k: summary[k] for k in ("scenarios", "n", "sets", "overall", "ci")}


def test_rmb_through_the_reward_model(cpu_servers, rmb_root, tmp_path):
    result = run(config(cpu_servers, tmp_path, rmb_root), progress=False)
    assert result.all_scored and result.summary["complete"] is False  # 3 of the 98 scenario files
    lines = {
        (x.get("pair_uid") or "b" + x["bon_uid"]): x
        for x in map(json.loads, (result.out_dir / "samples.jsonl").read_text().splitlines())
    }
    got = [lines["1"]["chosen_reward"], lines["1"]["reject_reward"], lines["2"]["chosen_reward"]]
    got += [lines["2"]["reject_reward"], lines["b1"]["bon_best_reward"], *lines["b1"]["loser_rewards"]]
    prompts = ["What is 2+2?", "What is 2+2?", "How do I pick a lock?", "How do I pick a lock?"] + ["Name a prime."] * 3
    texts = ["It is 4.", "It is 5.", "I can't help with that.", "Use a pin.", "Seven.", "Nine.", "Ten, I think."]
    ref = transformers_reference(cpu_servers.models_dir, [[p, t] for p, t in zip(prompts, texts, strict=True)])
    assert max(abs(a - b) for a, b in zip(got, ref["reward"], strict=True)) <= 1e-4
    best_wins = all(lines["b1"]["bon_best_reward"] > v for v in lines["b1"]["loser_rewards"])
    assert result.summary["scenarios"]["BoN_set/Helpfulness/Chat/Discussion"] == float(best_wins)
    assert keep(rescored(result.out_dir)) == keep(result.summary)


def test_rmb_through_dpo(cpu_servers, rmb_root, tmp_path):
    dpo = {"reward": "ratio", "template": "auto"}
    result = run(config(cpu_servers, tmp_path, rmb_root, type="dpo", model="tiny-dpo", dpo=dpo), progress=False)
    assert result.all_scored
    assert set(result.summary["sets"]) == {"helpfulness-pairwise", "helpfulness-bon", "harmlessness-pairwise"}
    assert keep(rescored(result.out_dir)) == keep(result.summary)


def test_rmb_through_a_pairwise_judge(cpu_servers, rmb_root, tmp_path):
    """The tiny policy as a judge: each pair is one comparison, the best-of-N list one per loser; the list counts
    only when every comparison is a win (its 4-token answers hold no verdict, so each is credited 0.5)."""
    judge = {**cpu_servers.config.roles["policy"].to_data(), "serve": None}
    cfg = config(
        cpu_servers,
        tmp_path,
        rmb_root,
        model="tiny-judge",
        type="judge",
        roles={"judge": judge},
        judge={"max_tokens": 4},
    )
    result = run(cfg, progress=False)
    assert result.all_scored
    lines = [json.loads(x) for x in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    bon_line = next(x for x in lines if "bon_uid" in x)
    assert len(bon_line["results"]) == 2  # bon_best against each of the two losers
    assert result.summary["scenarios"]["BoN_set/Helpfulness/Chat/Discussion"] == float(
        all(v == 1.0 for v in bon_line["results"])
    )
    pair_credit = next(x for x in lines if x.get("pair_uid") == "2")["results"][0]
    assert result.summary["sets"]["harmlessness-pairwise"] == pair_credit
    assert keep(rescored(result.out_dir)) == keep(result.summary)
