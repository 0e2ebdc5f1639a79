"""RewardBench 2: scoring worked out by hand against reward-bench's rules, the loader on files with the hub's
schema, and a server-free run (baseline:longer) whose numbers are known from the answers' lengths."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import msgspec
import numpy as np
import pytest
from helpers_scoring import score
from hub_schemas import RB2_SCHEMA, hub_shard, rb2_record, write_parquet

from rmbench_client.benchmarks.reward_bench_2 import BENCHMARK
from rmbench_client.benchmarks.reward_bench_2 import scoring as rb2
from rmbench_client.cli import main
from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError
from rmbench_client.examples import UNPARSED_RATINGS, PromptScores
from rmbench_client.results.typed import load_result
from rmbench_client.run.runner import run

TANH_HALF = math.tanh(-0.5)


def p(rid: str, subset: str, correct, incorrect, details=None) -> PromptScores:
    return PromptScores(rid, subset, tuple(map(float, correct)), tuple(map(float, incorrect)), details=details)


# --- non-Ties: 1/k ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([4, 1, 2, 3], 1.0),
        ([4, 4, 1, 0], 1 / 2),  # a tie at the top is partial credit
        ([4, 4, 4, 1], 1 / 3),
        ([4, 4, 4, 4], 1 / 4),
        ([3, 4, 1, 0], 0.0),
        ([2, 3, 3, 1], 0.0),  # incorrect answers tied at the top: still 0
        ([1.0, 1.0 + 2**-52, 0, 0], 0.0),  # exact equality, no tolerance
        ([1.0 + 2**-52, 1.0, 0, 0], 1.0),
        ([math.nan, 1, 2, 3], 0.0),  # NaN anywhere: the maximum is NaN, nothing equals it
        ([3, math.nan, 1, 0], 0.0),
        ([math.inf, 1, 2, 3], 1.0),
        ([math.inf, math.inf, 0, 0], 1 / 2),
    ],
)
def test_credit_one_over_k(scores, expected):
    assert rb2.credit(scores) == expected


def test_subset_is_mean_credit_and_final_is_plain_mean_of_subsets():
    recs = [
        p("1", "Factuality", [4], [1, 2, 3]),
        p("2", "Factuality", [4], [4, 1, 0]),
        p("3", "Factuality", [4], [4, 4, 4]),
        p("4", "Factuality", [3], [4, 1, 0]),
        p("5", "Math", [1], [0, 0, 0]),
        p("6", "Safety", [0], [1, 1, 1]),
    ]
    s = score("reward-bench-2", recs, samples=50)
    assert s["subsets"] == {"Factuality": (1 + 0.5 + 0.25 + 0) / 4, "Math": 1.0, "Safety": 0.0}
    assert list(s["subsets"]) == ["Factuality", "Math", "Safety"]  # reward-bench's subset order
    assert s["n"] == {"Factuality": 4, "Math": 1, "Safety": 1}
    assert s["score"] == pytest.approx((0.4375 + 1 + 0) / 3, abs=1e-15)  # not weighted by prompts
    assert "ties" not in s and "ratings" not in s and "nonfinite_scores" not in s


def test_nan_scores_are_scored_as_reward_bench_and_counted():
    s = rb2.score([p("1", "Focus", [math.nan], [1, 2, 3]), p("2", "Focus", [5], [1, 2, 3])], samples=20)
    assert s.subsets["Focus"] == 0.5 and s.nonfinite_scores == 1


def test_a_judge_credit_stands_for_the_scores():
    recs = [PromptScores("1", "Precise IF", (), (), results=(0.25,)), p("2", "Precise IF", [2], [1, 1, 1])]
    assert rb2.score(recs, samples=10).subsets["Precise IF"] == (0.25 + 1) / 2


# --- Ties ---------------------------------------------------------------------------------------------------------

# N=1: ref gap 5-2 = 3 (accurate); tied correct 6,4 -> spread 2, gap 4-3 = 1 (accurate)
#      preferred: 1 > 2 no; hard: min(3, 1) = 1 > 2 no; margin tanh(1/2 - 1) = tanh(-0.5)
# N=2: ref gap 1-3 = -2 (not accurate); tied correct 2,2,2 -> spread 0, gap 2 (accurate)
#      preferred: 2 > 0 yes; hard: min(-2, 2) = -2 > 0 no; margin tanh(-2/0 - 1) = tanh(-inf) = -1
# tied:3 (no ref): correct 1, 0.5 vs 1 -> gap -0.5, not accurate; ref:4 (no tied): gap 0, not accurate (strict)
TIES_CASE = [
    p("ref:1", "Ties", [5], [2, 1]),
    p("tied:1", "Ties", [6, 4], [3]),
    p("ref:2", "Ties", [1], [3]),
    p("tied:2", "Ties", [2, 2, 2], [0]),
    p("tied:3", "Ties", [1, 0.5], [1]),
    p("ref:4", "Ties", [0], [0]),
]


def test_ties_group_with_known_margins():
    s = score("reward-bench-2", TIES_CASE, samples=50)
    ties = s["ties"]
    assert ties["ref_accuracy"] == 1 / 3 and ties["tied_accuracy"] == 2 / 3
    assert ties["correctness_preferred"] == 0.5 and ties["correctness_preferred_hard"] == 0.0
    assert ties["correctness_margin_score"] == pytest.approx((TANH_HALF - 1) / 2, abs=1e-15)
    assert (ties["ref"], ties["tied"], ties["pairs"]) == (3, 3, 2)
    expected = 0.3 * 2 / 3 + 0.3 * 1 / 3 + 0.2 * 0.5 + 0.2 * 0 + 0.01 * (TANH_HALF - 1) / 2
    assert s["subsets"]["Ties"] == pytest.approx(expected, abs=1e-15)
    assert s["score"] == s["subsets"]["Ties"]


@pytest.mark.parametrize(
    ("ref_gap", "margin"),
    [(1.0, 1.0), (-1.0, -1.0), (0.0, 0.0)],  # spread 0: m/0 is +inf, -inf, or NaN (0/0, counted as 0)
)
def test_ties_zero_spread(ref_gap, margin):
    recs = [p("ref:5", "Ties", [1 + ref_gap], [1]), p("tied:5", "Ties", [3, 3], [1])]
    ties = score("reward-bench-2", recs, samples=10)["ties"]
    assert ties["correctness_margin_score"] == margin
    assert ties["correctness_preferred"] == 1.0  # gap 2 > spread 0
    assert ties["correctness_preferred_hard"] == float(ref_gap > 0)


def test_ties_nan_scores_follow_pythons_min_and_max():
    # upstream takes max()/min() of Python lists: a NaN first poisons both, a NaN later is skipped
    _, first = rb2.ties_score([p("tied:1", "Ties", [math.nan, 1.0], [0.0])])
    _, later = rb2.ties_score([p("tied:1", "Ties", [1.0, math.nan], [0.0])])
    assert first.tied_accuracy == 0.0 and later.tied_accuracy == 1.0


def test_ties_without_shared_numbers_is_undefined_with_its_reason():
    """reward-bench's NaN (the mean of no number N with both kinds of prompt) is None here, with why."""
    s = score("reward-bench-2", [p("tied:1", "Ties", [2, 2], [1]), p("ref:2", "Ties", [2], [1])], samples=10)
    assert s["ties"]["tied_accuracy"] == 1.0 and s["ties"]["pairs"] == 0
    assert s["ties"]["correctness_preferred"] is None and s["subsets"]["Ties"] is None and s["score"] is None
    assert s["ci"] == {"subsets": {"Ties": [None, None]}, "score": [None, None]}
    why = "no number N has both a ref and a tied prompt (1 ref, 1 tied prompt(s))"
    assert s["undefined"]["Ties/correctness_margin_score"] == why
    assert s["undefined"]["Ties"] == f"its terms comparing ref and tied prompts are undefined: {why}"
    assert s["undefined"]["score"] == "the mean of the subsets, and Ties has none"


def test_an_undefined_ties_run_writes_null_with_its_reason(tmp_path, capsys):
    """A run whose Ties prompts have no number N in common (as a --limit easily gives): summary.json is strict
    JSON (null, no NaN), the API's headline is None with the reason, the terminal says it, nothing fails."""
    records = [rb2_record("0", "Math", ["aaaa"], ["b", "c", "d"]), rb2_record("ref:1", "Ties", ["aaaaa"], ["bb", "c"])]
    data = write_parquet(hub_shard(tmp_path / "hub", "test"), records, RB2_SCHEMA)
    cfg = load_config(None, {"model": "baseline:longer", "benchmark": "reward-bench-2", "data": str(data),
                             "out": str(tmp_path / "r")})  # fmt: skip
    run(cfg, progress=False)
    result = load_result(tmp_path / "r")

    def no_nan(token: str) -> float:
        raise AssertionError(f"{token} in summary.json")

    written = json.loads((tmp_path / "r" / "summary.json").read_text(encoding="utf-8"), parse_constant=no_nan)
    assert written["score"] is None and written["subsets"] == {"Math": 1.0, "Ties": None}
    assert result.headline.value is None and result.headline.reason == "the mean of the subsets, and Ties has none"
    assert main(["score", str(tmp_path / "r" / "samples.jsonl")]) == 0
    assert "undefined: score: the mean of the subsets, and Ties has none" in capsys.readouterr().out


def test_ties_accuracy_of_an_absent_kind_is_zero():
    _, ties = rb2.ties_score([p("tied:1", "Ties", [2, 2], [1])])
    assert ties.ref_accuracy == 0.0 and ties.tied_accuracy == 1.0


@pytest.mark.parametrize(
    ("record", "detail"),
    [
        (p("tied:1", "Ties", [2], [1]), "at least 2 correct"),  # reward-bench: TypeError on None
        (p("ref-1", "Ties", [2], [1]), "ref:N"),
        (p("ref:x", "Ties", [2], [1]), "ref:N"),
        (p("ref:1", "Ties", [2], []), "incorrect"),  # reward-bench: max() of an empty list
        (PromptScores("ref:1", "Ties", (), (), results=(1.0,)), "needs scores"),
        (p("1", "Chess", [2], [1]), "Chess"),
    ],
)
def test_where_reward_bench_would_crash_a_clear_error(record, detail):
    with pytest.raises(DataError, match=detail):
        rb2.score([p("ref:9", "Ties", [2], [1]), record], samples=10)


def test_ties_duplicate_is_an_error():
    with pytest.raises(DataError, match="twice"):
        rb2.score([p("ref:1", "Ties", [2], [1]), p("ref:1", "Ties", [3], [1])], samples=10)


# --- bootstrap ----------------------------------------------------------------------------------------------------


def test_bootstrap_seeded_and_contains_the_estimate():
    recs = [p(str(i), "Math", [i % 3], [1, 0, 0]) for i in range(40)] + TIES_CASE
    a, b = (score("reward-bench-2", recs, seed=3, samples=300) for _ in range(2))
    assert a["ci"] == b["ci"]
    for name, (lo, hi) in a["ci"]["subsets"].items():
        assert lo <= a["subsets"][name] <= hi
    assert a["ci"]["score"][0] <= a["score"] <= a["ci"]["score"][1]
    assert score("reward-bench-2", recs, seed=4, samples=300)["ci"] != a["ci"]


def test_ties_resampled_by_number_keeping_ref_and_tied_together():
    # N=1: ref gap 5, tied spread 1 gap 2 (hard: yes); N=2: ref gap -1 (hard: no), same tied
    recs = [
        p("ref:1", "Ties", [5], [0]),
        p("tied:1", "Ties", [3, 2], [0]),
        p("ref:2", "Ties", [0], [1]),
        p("tied:2", "Ties", [3, 2], [0]),
    ]
    paired = {round(rb2.ties_score(c)[0], 12) for c in (recs[:2], recs[2:], recs)}
    reps = rb2._ties_replicates(recs, np.random.default_rng(0), 200)
    assert {round(float(r), 12) for r in reps} == paired  # only resamples of whole numbers occur


# --- a judge's ratings --------------------------------------------------------------------------------------------


def reward_bench_rating_result(ratings: list[int]) -> float:
    """reward-bench's rule for per-answer ratings (run_generative_v2.py), restated: -1 is unparsed and never
    wins; no valid rating at all scores 0.25; else the correct answer (index 0) shares the top 1/k."""
    valid = [r for r in ratings if r != -1]
    if not valid:
        return 0.25
    winners = [i for i, r in enumerate(ratings) if r == max(valid)]
    return (0 in winners) / len(winners)


def test_one_over_k_on_ratings_is_reward_benchs_rating_rule():
    for ratings in itertools.product([-1, 1, 5, 9, 10], repeat=4):  # 1 correct + 3 incorrect, every pattern
        assert rb2.credit(ratings) == reward_bench_rating_result(list(ratings)), ratings


def test_unparsed_ratings_counted_from_the_records():
    recs = [
        p("1", "Focus", [-1], [-1, -1, -1], details={UNPARSED_RATINGS: 4}),  # no valid rating: 0.25
        p("2", "Focus", [7], [-1, 7, 3], details={UNPARSED_RATINGS: 1}),  # unparsed left out: 7 vs 7 -> 1/2
        p("3", "Focus", [9], [2, 3, 4], details={UNPARSED_RATINGS: 0}),
    ]
    s = score("reward-bench-2", recs, samples=10)
    assert s["subsets"]["Focus"] == (0.25 + 0.5 + 1) / 3
    assert s["ratings"] == {"unparsed": 5, "unrated_prompts": 1}


# --- the typed summary --------------------------------------------------------------------------------------------


def test_the_summary_round_trips_through_summary_json_and_an_old_one_reads_back():
    recs = [*TIES_CASE, p("1", "Focus", [math.nan], [1, 2, 3], details={UNPARSED_RATINGS: 3}), p("2", "Math", [5], [1])]
    typed = rb2.score(recs, samples=20)
    text = json.dumps(BENCHMARK.summary_json(typed), indent=2)  # as summary.json holds it (NaN and all)
    again = BENCHMARK.read_summary(json.loads(text))
    assert again == typed and json.dumps(BENCHMARK.summary_json(again), indent=2) == text
    keys = ["benchmark", "ties", "subsets", "n", "score", "ci", "ratings", "nonfinite_scores"]
    assert list(json.loads(text)) == keys  # the order score() has always written them in
    assert isinstance(typed.ties.ref, int) and isinstance(typed.nonfinite_scores, int)
    # a summary without the keys held only sometimes (no Ties, ratings or non-finite score; a results file's:
    # no n, no intervals) reads back with them unset, and is drawn and headlined as before
    old = {k: v for k, v in json.loads(text).items() if k in ("benchmark", "subsets", "score")}
    lean = BENCHMARK.read_summary(old | {"model": "rm", "seed": 0})  # a run's fields are not the benchmark's
    assert (lean.ties, lean.n, lean.ci, lean.ratings, lean.nonfinite_scores) == (msgspec.UNSET,) * 5
    assert BENCHMARK.summary_json(lean) == old
    assert BENCHMARK.headline_intervals(lean) == {} and BENCHMARK.table(lean, "t").caption is None
    assert dict(BENCHMARK.headline(lean))["Ties"] == typed.subsets["Ties"]
    # a run that scored nothing wrote its benchmark alone: no group scored, no score
    empty = BENCHMARK.read_summary({"benchmark": "reward-bench-2"})
    assert BENCHMARK.scored_groups(empty) == [] and dict(BENCHMARK.headline(empty))["score"] is None


# --- the loader ---------------------------------------------------------------------------------------------------

# Lengths are the baseline:longer scores. Factuality 1 and 1/2, Precise IF 0, Math 1/4, Safety 1; no Focus.
# Ties: ref:1 gap 5-2 = 3; tied:1 lengths 6,4 vs 3 (spread 2, gap 1); ref:2 gap 1-3 = -2; tied:2 lengths 3,3,3 vs 1
# (spread 0, gap 2): ref accuracy 1/2, tied accuracy 1, preferred 1/2, hard 0, margin (tanh(-1/2) - 1) / 2.
RECORDS = [
    rb2_record("0", "Factuality", ["aaaa"], ["b", "cc", "ddd"]),
    rb2_record("1", "Factuality", ["aaaa"], ["bbbb", "c", "d"]),
    rb2_record("2", "Precise IF", ["aa"], ["bbb", "c", "d"]),
    rb2_record("3", "Math", ["aaa"], ["bbb", "ccc", "ddd"]),
    rb2_record("4", "Safety", ["aaaaa"], ["b", "c", "d"]),
    rb2_record("ref:1", "Ties", ["aaaaa"], ["bb", "c"]),
    rb2_record("tied:1", "Ties", ["aaaaaa", "aaaa"], ["ccc"]),
    rb2_record("ref:2", "Ties", ["a"], ["bbb"]),
    rb2_record("tied:2", "Ties", ["aaa", "bbb", "ccc"], ["d"]),
]
TIES = 0.3 * 1 + 0.3 * 0.5 + 0.2 * 0.5 + 0.01 * (TANH_HALF - 1) / 2
SUBSETS = {"Factuality": 0.75, "Precise IF": 0.0, "Math": 0.25, "Safety": 1.0, "Ties": TIES}


@pytest.fixture
def rb2_file(tmp_path) -> Path:
    return write_parquet(hub_shard(tmp_path / "hub", "test"), RECORDS, RB2_SCHEMA)


@pytest.mark.parametrize("fmt", ["parquet", "json", "jsonl"])
def test_loader_reads_the_hub_schema(tmp_path, rb2_file, fmt):
    path = rb2_file
    if fmt == "json":
        path = tmp_path / "rb2.json"
        path.write_text(json.dumps(RECORDS), encoding="utf-8")
    elif fmt == "jsonl":
        path = tmp_path / "rb2.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    data = load_dataset("reward-bench-2", path)
    assert [ex.id for ex in data.examples] == [r["id"] for r in RECORDS]
    tied = data.examples[6]
    assert (tied.group, tied.chosen, tied.rejected) == ("Ties", ("aaaaaa", "aaaa"), ("ccc",))
    assert tied.prompt == "question tied:1" and tied.extra["models"] == ["model-0", "model-1", "model-2"]
    assert data.missing == ["Focus"]  # a run on this file is partial


def _bad(**change) -> dict:
    return rb2_record("7", "Focus", ["good"], ["bad", "worse", "worst"]) | change


@pytest.mark.parametrize(
    ("record", "detail"),
    [
        (_bad(num_correct=2), "'num_correct' is 2 but the record holds 1"),
        (_bad(total_completions=5), "total_completions"),
        (_bad(chosen="good"), "'chosen' must be a non-empty list"),
        (_bad(chosen=[]), "'chosen' must be a non-empty list"),
        (_bad(rejected=["bad", ""]), "rejected[1]"),
        (_bad(subset="Chess"), "Chess"),
        (_bad(models="m"), "models"),
        (_bad(prompt=3), "prompt"),
        (_bad(id="ref-1", subset="Ties"), "ref:N"),
        (rb2_record("tied:4", "Ties", ["only one"], ["bad"]), "at least 2 correct"),
        ({k: v for k, v in _bad().items() if k != "num_incorrect"}, "num_incorrect"),
    ],
)
def test_loader_bad_record_is_one_clear_error(tmp_path, record, detail):
    path = tmp_path / "rb2.jsonl"
    path.write_text(json.dumps(_bad(id="6")) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_dataset("reward-bench-2", path)
    assert str(path) in str(info.value) and "record 1" in str(info.value) and detail in str(info.value)


# --- a run without servers ----------------------------------------------------------------------------------------


def test_longer_baseline_run_matches_hand_computed_and_rescores(tmp_path, rb2_file, capsys):
    cfg = load_config(
        None,
        {"model": "baseline:longer", "benchmark": "reward-bench-2", "data": str(rb2_file), "out": str(tmp_path / "r")},
    )
    summary = run(cfg, progress=False).summary
    assert summary["subsets"] == pytest.approx(SUBSETS, abs=1e-15)
    assert summary["score"] == pytest.approx(sum(SUBSETS.values()) / 5, abs=1e-15)
    assert summary["missing_groups"] == ["Focus"] and summary["scored"] == 9
    assert summary["complete"] is False and summary["partial"] == ["no data for subset(s) Focus"]

    lines = [json.loads(x) for x in (tmp_path / "r" / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines[1] == {"id": "1", "subset": "Factuality", "scores": [4.0, 4.0, 1.0, 1.0], "num_correct": 1}
    assert lines[6] == {"id": "tied:1", "subset": "Ties", "scores": [6.0, 4.0, 3.0], "num_correct": 2}

    for path in ("samples.jsonl", "eval-set-scores/baseline:longer.json"):
        assert main(["score", str(tmp_path / "r" / path), "--json"]) == 0
        again = json.loads(capsys.readouterr().out)
        assert {k: again[k] for k in ("subsets", "n", "score", "ties", "ci")} == {
            k: summary[k] for k in ("subsets", "n", "score", "ties", "ci")
        }
    assert main(["score", str(tmp_path / "r" / "eval-set" / "baseline:longer.json"), "--json"]) == 0
    from_results = json.loads(capsys.readouterr().out)
    assert from_results == {"benchmark": "reward-bench-2", "subsets": summary["subsets"], "score": summary["score"]}


def test_compare_two_runs_by_subset_and_score(tmp_path):
    from rmbench_client.report.compare import render
    from rmbench_client.results.comparison import load_runs, notes

    a = score("reward-bench-2", [p("1", "Math", [2], [1, 0, 0]), *TIES_CASE], samples=10)
    b = score("reward-bench-2", [p("1", "Math", [0], [1, 0, 0]), p("2", "Focus", [1], [1, 0, 0])], samples=10)
    dirs = []
    for name, s in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({**s, "model": f"rm-{name}"}), encoding="utf-8")
        dirs.append(str(tmp_path / name))
    runs = load_runs(dirs)
    header, row_a, row_b = str(render(runs, "csv")).splitlines()
    assert header == "model,Math,Focus,Ties,score,n,failed,complete"  # reward-bench's order; no column no run has
    assert row_a == f"rm-a,100.00,,{100 * a['subsets']['Ties']:.2f},{100 * a['score']:.2f},,,unknown"
    assert row_b == "rm-b,0.00,50.00,,25.00,,,unknown"
    assert notes(runs) == ["the runs cover different subsets: overall numbers average over different sets"]


def test_score_counts_unparsed_ratings_from_sample_lines(tmp_path, capsys):
    lines = [
        {"id": "1", "subset": "Focus", "scores": [-1, -1, -1, -1], "num_correct": 1, "details": {"unparsed": 4}},
        {"id": "2", "subset": "Focus", "scores": [8, -1, 8, 2], "num_correct": 1, "details": {"unparsed": 1}},
    ]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert main(["score", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["subsets"]["Focus"] == (0.25 + 0.5) / 2 and s["ratings"] == {"unparsed": 5, "unrated_prompts": 1}
