"""IF-RewardBench (thu-coai/IF-RewardBench at c192fe9) on data in its file's fields (tests/new_benchmarks_fixture.py),
held against its metrics written out here: per instruction the preference graph's edges each once, a tie wrong,
accuracy C / max(|E|, 1) and its tau-b (C - D) / max(1, sqrt((C + D)(C + D + T))); the means per instruction type,
overall the types' mean, and its breakdowns; a line carries what `score` needs. Where $RMBENCH_IFREWARDBENCH_DIR
names its checkout, its own `calculate_pairwise_metrics` and `StatsCollector` score the same run."""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from helpers_cli import rescored
from new_benchmarks_fixture import write_if

import rmbench_client as rmb
from rmbench_client.benchmarks.if_reward_bench.data import turn
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError

UPSTREAM = os.environ.get("RMBENCH_IFREWARDBENCH_DIR")
SIZES = {"Qwen3-8B": "Small", "GLM-4.5-Air": "Middle", "Kimi-K2": "Large", "GPT-5": "API"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    root = tmp_path_factory.mktemp("if")
    data = write_if(root / "if_rewardbench.json", instructions=30)
    rmb.evaluate({"model": "baseline:longer"}, benchmark="if-reward-bench", data=data, out=root / "run")
    return root / "run", json.loads(data.read_text())


def metrics(item: dict) -> tuple[float, float]:
    """One instruction's accuracy and tau by its scripts' formulas, baseline:longer's scores (response lengths)."""
    score = {r["response_id"]: len(r["response"]) for r in item["responses"]}
    edges = {(e["chosen"]["response_id"], e["rejected"]["response_id"]) for e in item["preference_graph"]}
    c = sum(score[u] > score[v] for u, v in edges)
    d = sum(score[u] < score[v] for u, v in edges)
    t = len(edges) - c - d
    return c / max(len(edges), 1), (c - d) / max(1, math.sqrt((c + d) * (c + d + t)))


def test_figures_per_type_overall_and_in_its_breakdowns(run: tuple[Path, list[dict]]) -> None:
    out, items = run
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["n"] == {"Multi_Turn": 10, "Single_Turn": 10, "System_Prompt": 10}
    per = {it["id"]: metrics(it) for it in items}
    keys = {
        "instruction_types": lambda it: it["instruction_type"],
        "model_types": lambda it: SIZES.get(it["response_generation_model"], "Unknown"),
        "turns": lambda it: str(turn(it["messages"])),
        "constraint_counts": lambda it: (lambda n: "<=3" if n <= 3 else ">=7" if n >= 7 else str(n))(
            len(it["checklist"])
        ),
    }
    for field, key in keys.items():
        groups: dict[str, list[tuple[float, float]]] = {}
        for it in items:
            groups.setdefault(key(it), []).append(per[it["id"]])
        assert set(s[field]) == set(groups), field
        for g, values in groups.items():
            assert s[field][g]["accuracy"] == pytest.approx(np.mean([v[0] for v in values]), abs=1e-15)
            assert s[field][g]["tau"] == pytest.approx(np.mean([v[1] for v in values]), abs=1e-15)
    types_ = s["instruction_types"]
    assert s["overall"]["accuracy"] == pytest.approx(np.mean([t["accuracy"] for t in types_.values()]), abs=1e-15)
    again = rescored(out)  # the line carries everything the figures need
    assert again == {k: v for k, v in s.items() if k in again}


def test_an_edge_given_twice_counts_once_and_an_instruction_without_edges_counts_zero(tmp_path: Path) -> None:
    item = {"id": 1, "response_generation_model": "Qwen3-8B", "instruction_type": "Single_Turn",
            "messages": [{"role": "user", "content": "Write a haiku."}], "checklist": ["5-7-5"],
            "constraint_type": [], "preference_graph": [],
            "responses": [{"response_id": 0, "response": "long answer", "labels": [1]},
                          {"response_id": 1, "response": "short", "labels": [0]}]}  # fmt: skip
    edge = {"chosen": {"response_id": 0}, "rejected": {"response_id": 1}}
    twice = item | {"id": 2, "preference_graph": [edge, edge]}
    (tmp_path / "if.json").write_text(json.dumps([item, twice]))
    examples = load_dataset("if-reward-bench", tmp_path / "if.json").examples
    assert [e.pairs for e in examples] == [(), ((0, 1),)]
    result = rmb.evaluate({"model": "baseline:longer"}, benchmark="if-reward-bench", data=tmp_path / "if.json",
                          out=tmp_path / "run")  # fmt: skip
    assert result.summary["instruction_types"]["Single_Turn"] == {"accuracy": 0.5, "tau": 0.5}  # (0 + 1) / 2
    bad = twice | {"preference_graph": [{"chosen": {"response_id": 0}, "rejected": {"response_id": 7}}]}
    (tmp_path / "bad.json").write_text(json.dumps([bad]))
    with pytest.raises(DataError, match=r"bad.json: record 0 \(id 2\): 'preference_graph\[0\]'"):
        load_dataset("if-reward-bench", tmp_path / "bad.json")


@pytest.mark.skipif(not UPSTREAM, reason="set RMBENCH_IFREWARDBENCH_DIR to a checkout of thu-coai/IF-RewardBench "
                    "(c192fe9) to score with its own metrics code")  # fmt: skip
def test_its_own_metrics_code_agrees(run: tuple[Path, list[dict]]) -> None:
    out, items = run
    if importlib.util.find_spec("sklearn") is None:  # imported at its top for a function this test never calls
        sys.modules["sklearn"] = types.ModuleType("sklearn")
        sys.modules["sklearn.metrics"] = types.SimpleNamespace(matthews_corrcoef=None)  # type: ignore[assignment]
    sys.path.insert(0, str(Path(UPSTREAM or "") / "metrics"))
    up = importlib.import_module("analysis_constraint_assessment")
    scores = {
        json.loads(line)["id"]: json.loads(line)["scores"] for line in (out / "samples.jsonl").read_text().splitlines()
    }
    collector = up.StatsCollector()
    for d in items:
        by_id = {r["response_id"]: v for r, v in zip(d["responses"], scores[str(d["id"])], strict=True)}
        pairwise = up.calculate_pairwise_metrics(d["preference_graph"], by_id)
        for group, key in (("model_type", up.get_model_type(d["response_generation_model"])),
                           ("instruction_type", d["instruction_type"]), ("turn", up.get_turn(d)),
                           ("constraint_count", up.get_constraint_count_bucket(len(d["checklist"])))):  # fmt: skip
            collector.update(group, key, {"Positive F1": 0, "Negative F1": 0}, pairwise, [], [])
    s = json.loads((out / "summary.json").read_text())
    ours = {"model_type": "model_types", "turn": "turns", "instruction_type": "instruction_types",
            "constraint_count": "constraint_counts"}  # fmt: skip
    for group, field in ours.items():
        for key, figs in collector.compute_metrics(group).items():
            assert s[field][str(key)] == {
                "accuracy": figs["ranking"]["Accuracy"],
                "tau": figs["ranking"]["Kendall Taub"],
            }
    for name, raw in (("accuracy", "pair_acc"), ("tau", "kendall")):
        valid = [
            collector.get_raw_means("instruction_type", t, raw) for t in ("Single_Turn", "Multi_Turn", "System_Prompt")
        ]
        assert s["overall"][name] == sum(valid) / len(valid)
