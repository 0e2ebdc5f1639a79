"""JudgeBench (ScalerLab/JudgeBench): the hub records' schema, categories from the source, accuracy as JudgeBench's
code computes it (strictly higher score wins; ties are not correct; pair-weighted overall), re-scoring, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers_cli import cli

from rmbench_client.benchmarks import registry as benchmarks
from rmbench_client.config.schema import JudgeOptions
from rmbench_client.datasets import load_dataset
from rmbench_client.examples import PromptScores
from rmbench_client.model_kinds.judge import JudgeModel, credit_both, judgebench
from rmbench_client.model_kinds.judge_prompts import project

QUESTION = "What is 2 + 2?\n(A) 3\n(B) 4\nLet's think step by step."


def record(i: int, source: str, label: str, long_side: str) -> dict:
    """One pair in the hub's schema; `long_side` says which response is the longer (baseline:longer prefers it)."""
    long, short = f"A careful answer {i} with many more words in it. BBBBB", f"Answer {i}: AAAAA"
    a, b = (long, short) if long_side == "A" else (short, long)
    return {"pair_id": f"00000000-0000-5000-8000-{i:012d}", "original_id": str(1000 + i), "source": source,
            "question": f"{QUESTION} ({i})", "response_model": "gpt-4o-2024-05-13", "response_A": a,
            "response_B": b, "label": label}  # fmt: skip


RECORDS = [  # longer-wins is right exactly when the label prefers the longer response
    record(0, "mmlu-pro-law", "A>B", "A"),  # right
    record(1, "mmlu-pro-math", "B>A", "A"),  # wrong
    record(2, "livebench-reasoning", "B>A", "B"),  # right
    record(3, "livebench-math", "A>B", "B"),  # wrong
    record(4, "livebench-math", "A>B", "A"),  # right
    record(5, "livecodebench", "B>A", "B"),  # right
]


def hub_split(directory: Path, name: str, records: list[dict]) -> Path:
    """A split as the hub's parquet shard (all columns strings, as on the hub)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def test_loader_reads_the_hub_schema_with_categories_from_the_source(tmp_path):
    hub_split(tmp_path, "gpt", RECORDS[:4])
    hub_split(tmp_path, "claude", RECORDS[4:])
    data = load_dataset("judgebench", tmp_path)
    by_id = {ex.id: ex for ex in data.examples}
    assert [by_id[r["pair_id"]].group for r in RECORDS] == ["knowledge", "knowledge", "reasoning", "math", "math",
                                                             "coding"]  # fmt: skip
    first = by_id[RECORDS[1]["pair_id"]]
    assert first.chosen == (RECORDS[1]["response_B"],) and first.rejected == (RECORDS[1]["response_A"],)
    assert data.missing == []


def test_accuracy_as_judgebench_computes_it():
    """Strictly higher wins; equal scores are one decision each way over JudgeBench's two games: not correct."""
    recs = [PromptScores("a", "math", (2.0,), (1.0,)), PromptScores("b", "math", (1.0,), (1.0,)),
            PromptScores("c", "coding", (0.0,), (3.0,)), PromptScores("d", "coding", (5.0,), (4.0,)),
            PromptScores("e", "coding", (1.5,), (1.0,))]  # fmt: skip
    summary = benchmarks.get("judgebench").score(recs, seed=0)
    assert summary.benchmark == "judgebench"
    assert summary.subsets == {"coding": 2 / 3, "math": 0.5}
    assert summary.accuracy == pytest.approx(3 / 5)  # n_correct / n_pairs, every pair alike
    assert summary.macro_accuracy == pytest.approx((2 / 3 + 0.5) / 2)
    assert benchmarks.get("judgebench").headline(summary)[-1] == ("accuracy", pytest.approx(0.6))


def test_a_run_rescored_and_a_missing_category_is_partial(tmp_path):
    data = tmp_path / "data"
    hub_split(data, "gpt", [r for r in RECORDS if r["source"] != "livecodebench"])
    out = tmp_path / "run"
    proc = cli("run", "--model", "baseline:longer", "--benchmark", "judgebench", "--data", str(data), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["subsets"] == {"knowledge": 0.5, "math": 0.5, "reasoning": 1.0} and summary["accuracy"] == 0.6
    assert summary["complete"] is False and any("coding" in reason for reason in summary["partial"])
    rescored = cli("score", str(out / "samples.jsonl"), "--json")
    assert rescored.returncode == 0, rescored.stderr
    again = json.loads(rescored.stdout)
    assert again["subsets"] == summary["subsets"] and math.isclose(again["accuracy"], summary["accuracy"])


def test_a_bad_label_is_one_error_naming_the_record(tmp_path):
    bad = tmp_path / "gpt.jsonl"
    bad.write_text(json.dumps(RECORDS[0] | {"label": "A=B"}) + "\n")
    proc = cli("run", "--model", "baseline:longer", "--benchmark", "judgebench", "--data", str(bad),
               "--out", str(tmp_path / "r"))  # fmt: skip
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1
    assert f"{bad}: record 0" in lines[0] and "label 'A=B' is neither 'A>B' nor 'B>A'" in lines[0]


def judgebench_reference(label: str, decisions: list[str | None]) -> bool:
    """JudgeBench's combination, as its utils/metrics.py states it: decisions in its own terms ("A>B", "B>A",
    "A=B" or None), the second game's decision flipped back to the original order; +1 per decision equal to the
    label, -1 per decision equal to the flipped label; correct when the sum is positive."""
    flip = {"A>B": "B>A", "B>A": "A>B"}
    first, second = decisions[0], flip.get(decisions[1] or "", decisions[1])
    counter = sum((d == label) - (d == flip[label]) for d in (first, second))
    return counter > 0


VERDICT_AS_DECISION = {"A": "A>B", "B": "B>A", "C": "A=B", None: None}


@pytest.mark.parametrize("first", ["A", "B", "C", None])
@pytest.mark.parametrize("second", ["A", "B", "C", None])
def test_a_judges_two_verdicts_combine_as_judgebench_combines_them(first, second):
    """Chosen shown as A first, as B second (the project's `both` order); JudgeBench's games show its response_A
    first, so with label "A>B" the project's two games are JudgeBench's two games."""
    expected = judgebench_reference("A>B", [VERDICT_AS_DECISION[first], VERDICT_AS_DECISION[second]])
    assert judgebench(first, second) == float(expected)


def test_judgebench_differs_from_the_projects_both_orders_where_judgebench_says():
    assert judgebench("A", "C") == 1.0 and credit_both("A", "C") == 0.5  # one win, one tie: correct
    assert judgebench("A", "A") == 0.0 and credit_both("A", "A") == 0.5  # position bias: not correct
    assert judgebench(None, None) == 0.0 and credit_both(None, None) == 0.5  # no verdict: not correct


def asked(verdict: str) -> dict:
    """A stored judgement whose one answer gives `verdict`."""
    usage = {"prompt": 1, "completion": 1, "reasoning": None}
    return {
        "samples": [[{"content": f"[[{verdict}]]", "finish": "stop"}]],
        "usage": usage,
        "seconds": 0.1,
        "requests": 1,
    }


def test_a_judge_on_judgebench_always_asks_both_orders_and_counts_split_pairs():
    judge = JudgeModel(None, JudgeOptions(order="random"), "judgebench", {}, project())  # type: ignore[arg-type]
    assert judge.order == "both" and judge.identity["order"] == "both" and judge.identity["seed"] is None
    values = [judge.reduce({"asked": [asked(a), asked(b)]}) for a, b in (["A", "B"], ["A", "C"], ["A", "A"])]
    assert values == [1.0, 1.0, 0.0]
    assert judge.warnings == ["2 pair(s) judged differently in the two orders were scored as JudgeBench does"]


@pytest.mark.server
@pytest.mark.parametrize("kind", ["reward", "dpo"])
def test_judgebench_through_real_vllm_servers(cpu_servers, tmp_path, kind):
    """The tiny reward model's scores equal transformers' on apply_chat_template's tokens; DPO runs; both re-score
    through `score` to the same numbers, with every pair's decision from its two scores."""
    from conftest import transformers_reference

    from rmbench_client.config.schema import RunConfig
    from rmbench_client.run.runner import run

    hub_split(tmp_path / "data", "gpt", RECORDS)
    update = {"benchmark": "judgebench", "data": str(tmp_path / "data"), "out": str(tmp_path / "run")}
    if kind == "dpo":
        update |= {"type": "dpo", "model": "tiny-dpo"}
    result = run(RunConfig.from_data({**cpu_servers.config.to_data(), **update}), progress=False)
    assert result.all_scored and result.summary["complete"] is True
    lines = {x["id"]: x for x in map(json.loads, (result.out_dir / "samples.jsonl").read_text().splitlines())}
    if kind == "reward":
        pairs = [[r["question"], r[side]] for r in RECORDS for side in ("response_A", "response_B")]
        ref = transformers_reference(cpu_servers.models_dir, pairs)["reward"]
        for i, r in enumerate(RECORDS):
            a, b = ref[2 * i], ref[2 * i + 1]
            chosen, rejected = (a, b) if r["label"] == "A>B" else (b, a)
            line = lines[r["pair_id"]]
            assert abs(line["score_chosen"] - chosen) <= 1e-4 and abs(line["score_rejected"] - rejected) <= 1e-4
    correct = [lines[r["pair_id"]]["score_chosen"] > lines[r["pair_id"]]["score_rejected"] for r in RECORDS]
    assert result.summary["accuracy"] == pytest.approx(sum(correct) / len(correct))
    rescored = cli("score", str(result.out_dir / "samples.jsonl"), "--json")
    assert json.loads(rescored.stdout)["subsets"] == result.summary["subsets"]


@pytest.mark.server
def test_a_judge_on_judgebench_through_a_real_vllm_server(cpu_servers, tmp_path):
    """The tiny policy as the judge: its 8-token answers hold no verdict, so every pair is not correct as JudgeBench
    counts it (the project's own `both` would give 0.5): accuracy 0, both orders asked, re-scored the same."""
    from rmbench_client.config.schema import RunConfig
    from rmbench_client.run.runner import run

    hub_split(tmp_path / "data", "gpt", RECORDS)
    base = cpu_servers.config.to_data()
    cfg = RunConfig.from_data({
        **base, "model": "tiny-judge", "type": "judge", "roles": {"judge": {**base["roles"]["policy"], "serve": None}},
        "judge": {"max_tokens": 8}, "benchmark": "judgebench", "data": str(tmp_path / "data"),
        "out": str(tmp_path / "run"),
    })  # fmt: skip
    result = run(cfg, progress=False)
    assert result.all_scored and result.summary["complete"] is True
    assert result.summary["accuracy"] == 0.0 and set(result.summary["subsets"].values()) == {0.0}
    [warning] = result.summary["warnings"]
    assert warning.startswith(f"{2 * len(RECORDS)} judge answer(s) held no verdict (")
    assert warning.endswith("): counted for neither response, as JudgeBench does")
    lines = [json.loads(x) for x in (result.out_dir / "samples.jsonl").read_text().splitlines()]
    assert all(len(x["details"]["answers"][0]) == 2 for x in lines)  # both orders, whatever judge.order says
    rescored = cli("score", str(result.out_dir / "samples.jsonl"), "--json")
    assert json.loads(rescored.stdout)["subsets"] == result.summary["subsets"]
