"""RewardBench with its prior sets: a directory holding the filtered split and the `allenai/pref-test-sets`
splits (hub schemas, multi-turn prompts) loads through the reward-bench loader, and "Prior Sets" enters the score
at weight 0.5 exactly as the leaderboard computes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hub_schemas import FILTERED_SCHEMA, PRIOR_SCHEMA, filtered_record, prior_record, write_parquet

from rmbench_client.benchmarks.reward_bench import constants as rb_c
from rmbench_client.benchmarks.shared import eval_sets
from rmbench_client.cli import main
from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.run.runner import run

RIGHT, WRONG = ("a longer answer", "short"), ("short", "a longer answer")  # baseline:longer prefers length
FILTERED = [
    filtered_record(0, "alpacaeval-easy", *RIGHT),
    filtered_record(1, "alpacaeval-easy", *WRONG),  # Chat 0.5
    filtered_record(2, "mt-bench-hard", *RIGHT),  # Chat Hard 1
    filtered_record(3, "donotanswer", *WRONG),  # Safety 0
    filtered_record(4, "hep-go", *RIGHT),
    filtered_record(5, "hep-go", *RIGHT),  # Reasoning 1
]
PRIOR = {
    "anthropic_helpful": [
        prior_record(0, ["Hi", "Hello! How can I help?", "Tell me a joke"], *RIGHT),
        prior_record(1, ["A question"], *RIGHT),
    ],  # 1.0
    "anthropic_hhh": [prior_record(0, ["Be honest"], *WRONG, subset="honest")],  # 0.0
    "shp": [prior_record(0, ["Why?"], *RIGHT, subset="askscience"), prior_record(1, ["How?"], *WRONG)],  # 0.5
    "summarize": [prior_record(0, ["Summarize: ..."], *RIGHT, subset="tldr")],  # 1.0
}
CHAT, CHAT_HARD, SAFETY, REASONING = 0.5, 1.0, 0.0, 1.0
PRIOR_SETS = (1.0 + 0.0 + 0.5 + 1.0) / 4


@pytest.fixture
def rb_dir(tmp_path) -> Path:
    """The files as `data fetch reward-bench` leaves them: each hub shard under its own name, side by side."""
    d = tmp_path / "reward-bench"
    write_parquet(d / "filtered-00000-of-00001.parquet", FILTERED, FILTERED_SCHEMA)
    for split, records in PRIOR.items():
        write_parquet(d / f"{split}-00000-of-00001.parquet", records, PRIOR_SCHEMA)
    return d


def test_prior_sets_load_one_subset_per_split(rb_dir):
    data = load_dataset("reward-bench", rb_dir)
    by_id = {ex.id: ex for ex in data.examples}
    assert len(data.examples) == len(FILTERED) + sum(map(len, PRIOR.values()))
    helpful = by_id["anthropic_helpful/0"]  # ids restart in every split: split/id keeps them apart
    assert (helpful.group, helpful.subgroup) == ("anthropic_helpful", "Prior Sets")
    assert helpful.prompt == (
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke"},
    )
    assert helpful.chosen == (RIGHT[0],) and helpful.rejected == (RIGHT[1],)
    assert by_id["shp/0"].extra["subsubset"] == "askscience"  # the record's own subset, as reward-bench keeps it
    assert by_id["0"].prompt == "prompt 0" and by_id["0"].group == "alpacaeval-easy"
    assert "anthropic_helpful" not in data.missing  # prior sets are optional: never make a run partial


def test_prior_sets_weigh_half_as_the_leaderboard(rb_dir, tmp_path, capsys):
    overrides = {"benchmark": "reward-bench", "data": str(rb_dir), "out": str(tmp_path / "r")}
    cfg = load_config(None, {"model": "baseline:longer", **overrides})
    summary = run(cfg, progress=False).summary
    sections = summary["sections"]
    assert sections == pytest.approx(
        {"Chat": CHAT, "Chat Hard": CHAT_HARD, "Safety": SAFETY, "Reasoning": REASONING, "Prior Sets": PRIOR_SETS},
        abs=1e-15,
    )
    # the leaderboard: weights 2, 2, 2, 2 for the sections and 1 for the prior sets' plain mean
    leaderboard = (2 * CHAT + 2 * CHAT_HARD + 2 * SAFETY + 2 * REASONING + 1 * PRIOR_SETS) / 9
    assert summary["score"] == pytest.approx(leaderboard, abs=1e-15)

    # reward-bench's files: the core set in eval-set*/, the prior sets in pref-sets*/, as its --pref_sets runs
    out = tmp_path / "r"
    name = "baseline:longer.json"
    for results_dir in (eval_sets.RESULTS_DIR, rb_c.PRIOR_RESULTS_DIR):
        grouped = json.loads((out / results_dir / name).read_text(encoding="utf-8"))
        prior = results_dir == rb_c.PRIOR_RESULTS_DIR
        assert {k for k in grouped if k in summary["subsets"]} == {
            k for k in summary["subsets"] if (k in rb_c.PRIOR_SUBSETS) == prior
        }
    both = [str(out / d / name) for d in (eval_sets.SCORES_DIR, rb_c.PRIOR_SCORES_DIR)]
    assert main(["score", *both, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again == {k: summary[k] for k in again}
    both = [str(out / d / name) for d in (eval_sets.RESULTS_DIR, rb_c.PRIOR_RESULTS_DIR)]
    assert main(["score", *both, "--json"]) == 0
    from_results = json.loads(capsys.readouterr().out)
    assert from_results["sections"] == sections and from_results["score"] == summary["score"]


def test_other_pref_test_sets_splits_are_reported_but_not_scored(rb_dir, tmp_path):
    write_parquet(rb_dir / "mtbench_human-00000-of-00001.parquet", [prior_record(0, ["q"], *WRONG)], PRIOR_SCHEMA)
    overrides = {"benchmark": "reward-bench", "data": str(rb_dir), "out": str(tmp_path / "r")}
    summary = run(load_config(None, {"model": "baseline:longer", **overrides}), progress=False).summary
    assert summary["subsets"]["mtbench_human"] == 0.0
    assert summary["sections"]["Prior Sets"] == PRIOR_SETS  # the leaderboard's four only
    assert summary["score"] == pytest.approx((2 * CHAT + 2 * CHAT_HARD + 2 * REASONING + PRIOR_SETS) / 9, abs=1e-15)
    pref = json.loads((tmp_path / "r" / rb_c.PRIOR_RESULTS_DIR / "baseline:longer.json").read_text())
    assert pref["mtbench_human"] == 0.0  # written with the prior sets, as reward-bench's --pref_sets runs do
