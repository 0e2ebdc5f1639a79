"""Typed summaries of the preference benchmarks (RM-Bench, RewardBench, your own pairs, JudgeBench): what `score`
returns goes to JSON and back unchanged, and a summary written without a key that is only sometimes there (an
older run's, a reward-bench results file's, a run that scored nothing) reads back with the key unset."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest

from rmbench_client.benchmarks import registry
from rmbench_client.benchmarks.shared.style_bias import StyleBias
from rmbench_client.examples import PromptScores

RM_DOMAINS = ("chat", "code", "safety")
RB_SUBSETS = ("alpacaeval-easy", "mt-bench-hard", "donotanswer", "hep-go", "anthropic_hhh")
PAIR_SUBSETS = {"pairwise": ("a", "b"), "judgebench": ("knowledge", "math")}


def _records(name: str, seed: int) -> tuple[list[PromptScores], dict[str, tuple[tuple[int, ...], tuple[int, ...]]]]:
    """Scores (ties among them) and response lengths of a few prompts per group of benchmark `name`."""
    rng = random.Random(seed)
    width = 3 if name == "rm-bench" else 1
    groups = RM_DOMAINS if name == "rm-bench" else RB_SUBSETS if name == "reward-bench" else PAIR_SUBSETS[name]
    records, lengths = [], {}
    for g in groups:
        for i in range(6):
            rid = f"{g}/{i}"
            scores = [float(rng.randint(0, 4)) for _ in range(2 * width)]  # few values: ties
            records.append(PromptScores(rid, g, tuple(scores[:width]), tuple(scores[width:])))
            lengths[rid] = tuple(tuple(rng.randint(10, 400) for _ in range(width)) for _ in range(2))
    return records, lengths


def _judged(name: str) -> list[PromptScores]:
    width = 9 if name == "rm-bench" else 1
    group = {"rm-bench": "chat", "reward-bench": "hep-go"}.get(name, "x")
    return [PromptScores(f"{group}/{i}", group, (), (), (float(i % 2),) * width) for i in range(4)]


def _text(obj: dict[str, Any]) -> str:
    return json.dumps(obj, indent=2)  # as summary.json is written


def _round_trip(name: str, summary: Any) -> dict[str, Any]:
    """The summary's JSON object through summary.json's text and back; the same text either way."""
    bench = registry.get(name)
    first = bench.summary_json(summary)
    read = bench.read_summary(json.loads(_text(first)))
    assert type(read) is bench.summary_type
    again = bench.summary_json(read)
    assert _text(again) == _text(first)  # byte for byte: key order, ints as ints, NaN as NaN
    return again


BENCHMARKS = ("rm-bench", "reward-bench", "pairwise", "judgebench")


@pytest.mark.parametrize("name", BENCHMARKS)
def test_a_scored_summary_round_trips(name):
    bench = registry.get(name)
    records, lengths = _records(name, 3)
    summary = bench.score(records, seed=1, samples=50, lengths=lengths)
    assert type(summary) is bench.summary_type and summary.benchmark == name
    assert isinstance(summary.style_bias, StyleBias)  # given lengths: the length correlation at least
    data = _round_trip(name, summary)
    assert bench.read_summary(data) == summary  # every field, nested Structs too
    assert list(data)[0] == "benchmark" and "style_bias" in data
    assert bench.scored_groups(summary) == sorted({r.group for r in records})
    # what a run with the run's own facts next to the numbers holds reads back the same
    with_run = data | {"model": "m", "seed": 1, "scored": len(records), "complete": True}
    assert bench.read_summary(with_run) == summary


@pytest.mark.parametrize("name", BENCHMARKS)
def test_judge_credits_and_no_prompts_round_trip(name):
    bench = registry.get(name)
    judged = bench.score(_judged(name), samples=20)
    assert judged.style_bias is msgspec.UNSET  # a judge gives no per-response scores
    assert "style_bias" not in _round_trip(name, judged)
    empty = bench.score([], samples=20)
    _round_trip(name, empty)  # NaN where no prompt was scored (one-pair benchmarks), {} for RM-Bench's overall


@pytest.mark.parametrize("name", BENCHMARKS)
def test_a_summary_written_before_style_bias_reads_back_unset(name):
    bench = registry.get(name)
    records, lengths = _records(name, 5)
    data = bench.summary_json(bench.score(records, samples=20, lengths=lengths))
    older = {k: v for k, v in data.items() if k != "style_bias"}  # a run from before the diagnostics existed
    read = bench.read_summary(json.loads(_text(older)))
    assert read.style_bias is msgspec.UNSET
    assert bench.summary_json(read) == older
    assert bench.headline(read) == bench.headline(bench.read_summary(data))


@pytest.mark.parametrize("name", BENCHMARKS)
def test_a_run_that_scored_nothing_reads_back(name):
    """A run that scored no prompt writes `{"benchmark": ...}` and its own facts: no groups, no numbers."""
    bench = registry.get(name)
    summary = bench.read_summary({"benchmark": name, "model": "m", "scored": 0})
    assert bench.scored_groups(summary) == []
    assert all(value is None for _, value in bench.headline(summary))
    assert bench.headline_intervals(summary) == {}
    assert bench.summary_rows(summary)[1] == []
    assert bench.matrices(summary) == {}


def test_a_reward_bench_results_file_gives_a_summary_without_n_and_intervals():
    bench = registry.get("reward-bench")
    assert bench.results_summary is not None
    summary = bench.results_summary({"model": "m", "hep-go": 0.5, "donotanswer": 1.0}, "eval-set/m.json")
    assert summary is not None and summary.n is msgspec.UNSET and summary.ci is msgspec.UNSET
    data = _round_trip("reward-bench", summary)
    assert list(data) == ["benchmark", "subsets", "sections", "score"]
    assert data["sections"] == {"Safety": 1.0, "Reasoning": 0.5} and data["score"] == 0.75
    assert bench.headline_intervals(summary) == {}
    assert [row["name"] for row in bench.summary_rows(summary)[1]] == ["donotanswer", "hep-go", *data["sections"],
                                                                        "score"]  # fmt: skip


def test_rmbench_overall_is_empty_without_domains_and_whole_with_them():
    bench = registry.get("rm-bench")
    assert bench.summary_json(bench.score([], samples=10)) == {"benchmark": "rm-bench", "domains": {}, "overall": {}}
    records, _ = _records("rm-bench", 7)
    data = bench.summary_json(bench.score(records, samples=10))
    assert list(data["overall"]) == ["easy", "normal", "hard", "avg", "matrix", "n", "ci"]
    assert list(data["domains"]["chat"]) == ["easy", "normal", "hard", "avg", "n", "matrix", "ci"]
    assert data["overall"]["n"] == len(records) and isinstance(data["domains"]["chat"]["n"], int)
    assert list(bench.matrices(bench.read_summary(data))) == [*RM_DOMAINS, "overall"]
