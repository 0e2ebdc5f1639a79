"""An LLM judge on the best-of-N and ranking benchmarks, through the session's real vLLM CPU server (the tiny policy
model as the judge): RewardMATH's chosen solution compared with each rejected one, IF-RewardBench's responses each
rated on their own. The tiny model's answers hold no verdict and no rating: a comparison without a verdict is no win
for the chosen solution, an unparsed rating is -1 (every edge then tied: wrong, tau 0); the lines re-score alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CpuServers
from helpers_cli import rescored
from new_benchmarks_fixture import write_if, write_rewardmath

from rmbench_client.config.schema import RunConfig
from rmbench_client.run.runner import run

pytestmark = pytest.mark.server


def judge_config(cpu_servers: CpuServers, benchmark: str, data: Path, out: Path) -> RunConfig:
    base = cpu_servers.config.to_data()
    return RunConfig.from_data({**base, "model": "tiny-judge", "type": "judge", "benchmark": benchmark,
                                "roles": {"judge": {**base["roles"]["policy"], "serve": None}},
                                "judge": {"max_tokens": 4}, "data": str(data), "out": str(out)})  # fmt: skip


def test_a_judge_on_rewardmath_and_if_reward_bench(cpu_servers: CpuServers, tmp_path: Path) -> None:
    problems = run(judge_config(cpu_servers, "rewardmath", write_rewardmath(tmp_path / "rm.json", problems=1),
                                tmp_path / "rm"), progress=False)  # fmt: skip
    assert problems.all_scored and problems.sent_sequences == 9  # the chosen solution against each of nine
    [line] = [json.loads(x) for x in (tmp_path / "rm" / "samples.jsonl").read_text().splitlines()]
    assert line["results"] == [0.5] * 9  # no verdict: half a win each, as a tie; the problem is not right
    assert (
        problems.summary["overall"]["accuracy"] == 0.0
        and rescored(tmp_path / "rm")["overall"] == (problems.summary["overall"])
    )
    data = write_if(tmp_path / "if.json", instructions=2)
    responses = sum(len(r["responses"]) for r in json.loads(data.read_text()))
    ranked = run(judge_config(cpu_servers, "if-reward-bench", data, tmp_path / "if"), progress=False)
    assert ranked.all_scored and ranked.sent_sequences == responses  # one rating asked per response
    lines = [json.loads(x) for x in (tmp_path / "if" / "samples.jsonl").read_text().splitlines()]
    assert all(set(line["scores"]) == {-1.0} for line in lines)  # no rating read: -1 each
    assert ranked.summary["overall"] == {"accuracy": 0.0, "tau": 0.0}
    assert rescored(tmp_path / "if")["overall"] == ranked.summary["overall"]
