"""PPE Preference and PPE Correctness (lmarena's Preference Proxy Evaluations): the hub datasets' schemas, the
numbers computed by hand on small cases (categories, ties, pair-weighted sets, the sets' plain mean, best-of-K
against enumerating every K-subset), runs re-scored through `score`, compare, data fetch, errors; reward model,
DPO and judge through real vLLM CPU servers."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import msgspec
import numpy as np
import pytest
from helpers_cli import cli, one_error_line
from hub_standin import serve_hub
from ppe_fixture import (
    PREFERENCE_SCHEMA,
    K,
    battle,
    best_of_k,
    correctness_schema,
    write_correctness,
    write_preference,
    write_split,
)
from test_data import hub_env

from rmbench_client.benchmarks import registry as benchmarks
from rmbench_client.benchmarks.ppe_correctness import constants as ppec_c
from rmbench_client.benchmarks.ppe_correctness import scoring as ppe_correctness
from rmbench_client.benchmarks.ppe_preference import constants as ppep_c
from rmbench_client.benchmarks.ppe_preference import scoring as ppe_preference
from rmbench_client.datasets import load_dataset
from rmbench_client.examples import PromptScores

LONG, SHORT = "A long and careful answer with many words.", "Short."
BATTLES = [  # baseline:longer prefers response_1 in every battle: right exactly when model_a won
    battle("q1", "model_a", LONG, SHORT, hard_prompt=True, if_prompt=True),  # right
    battle("q2", "model_b", LONG, SHORT, hard_prompt=True, language="Chinese"),  # wrong
    battle("q3", "tie", LONG, SHORT),  # not scored
    battle("q4", "model_a", LONG, SHORT, is_code=True, language="German"),  # right
    battle("q5", "tie (bothbad)", LONG, SHORT, math_prompt=True),  # not scored
    battle("q6", "model_b", LONG, SHORT, easy_prompt=True, math_prompt=True),  # wrong
    battle("q7", "model_a", LONG, SHORT, language="Russian") | {"sim": 0.95},  # right; answers alike by `sim`
]

RIGHT, WRONG = "The correct answer, worked out with every step shown.", "Wrong, but far longer than the right one."


def row(name: str, i: int, pairs: list[list[int]]) -> dict:
    """Answers 0, 1 correct (0 long, 1 short), 2 wrong and longest, 3 wrong and short; the rest short and wrong."""
    answers = [RIGHT, "Right.", WRONG + " " + WRONG, "No."]
    return best_of_k(name, i, answers, [True, True, False, False], pairs)


CORRECTNESS = {  # longer wins: (0, 2) lost, (0, 3) won, (1, 2) lost, (1, 3) won; pairs named either way round
    "mmlu_pro": [row("mmlu_pro", 0, [[0, 3], [2, 1]]), row("mmlu_pro", 1, [[3, 0]])],  # 2 of 3 pairs
    "math": [row("math", 0, [[0, 2], [1, 2]])],  # 0 of 2
    "gpqa": [row("gpqa", 0, [[0, 3]]), row("gpqa", 1, [])],  # 1 of 1; a row without a sampled pair
    "ifeval": [row("ifeval", 0, [[1, 3], [0, 2], [0, 3], [1, 2]])],  # 2 of 4
    "mbpp_plus": [row("mbpp_plus", 0, [[0, 2]])],  # 0 of 1
}


def longer_run(bench: str, data: Path, out: Path) -> dict:
    """The `longer` baseline's run of the benchmark on the data; its summary."""
    proc = cli("run", "--model", "baseline:longer", "--benchmark", bench, "--data", str(data), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads((out / "summary.json").read_text()))


@pytest.fixture
def preference_dir(tmp_path: Path) -> Path:
    write_preference(tmp_path / "pref", BATTLES)
    return tmp_path / "pref"


@pytest.fixture
def correctness_dir(tmp_path: Path) -> Path:
    return write_correctness(tmp_path / "corr", CORRECTNESS)


# --- PPE Preference ---------------------------------------------------------------------------------------------


def test_preference_loader_reads_the_hub_schema_and_leaves_human_ties_out(preference_dir):
    data = load_dataset("ppe-preference", preference_dir)
    by_id = {ex.id: ex for ex in data.examples}
    assert sorted(by_id) == ["q1", "q2", "q4", "q6", "q7"] and data.unscored == 2
    assert by_id["q2"].chosen == (SHORT,) and by_id["q2"].rejected == (LONG,)  # model_b's answer is response_2
    assert by_id["q1"].prompt == "Question q1?" and by_id["q1"].extra["model_a"] == "gpt-4o-2024-05-13"
    # the battle tags: the winner's answer the shorter by the hub's token counts, or `sim` at least the threshold
    assert [by_id[i].group for i in ("q1", "q2", "q4", "q6", "q7")] == [
        "english/hard_prompt+if_prompt", "chinese/hard_prompt+shorter_won", "other/is_code",
        "english/easy_prompt+math_prompt+shorter_won", "russian/similar_response"]  # fmt: skip


def test_preference_accuracy_by_category_as_ppe_reports_it():
    recs = [
        PromptScores("a", "english/hard_prompt", (2.0,), (1.0,)),  # right
        PromptScores("b", "english/hard_prompt+is_code", (1.0,), (1.0,)),  # equal rewards: 1/2
        PromptScores("c", "chinese/hard_prompt", (0.0,), (3.0,)),  # wrong
        PromptScores("d", "other/math_prompt", (5.0,), (4.0,)),  # right
        PromptScores("e", "russian", (1.5,), (1.0,)),  # right
    ]
    bench = benchmarks.get("ppe-preference")
    typed = bench.score(recs, seed=0)
    s = bench.summary_json(typed)
    assert s["accuracy"] == pytest.approx(3.5 / 5)
    assert s["categories"] == pytest.approx({"hard_prompt": 1.5 / 3, "is_code": 0.5, "math_prompt": 1.0,
                                             "english_prompt": 0.75, "non_english_prompt": 2 / 3,
                                             "chinese_prompt": 0.0, "russian_prompt": 1.0})  # fmt: skip
    assert s["category_n"]["non_english_prompt"] == 3 and s["tied_rewards"] == 1
    assert "easy_prompt" not in s["categories"]  # no battle of the category: not a 0
    assert bench.headline(typed)[-1] == ("accuracy", pytest.approx(0.7))
    lo, hi = s["ci"]["accuracy"]
    assert lo <= s["accuracy"] <= hi


def test_preference_headline_numbers_from_group_means_equal_the_summary():
    """compare's significance aggregates group means: the same numbers as `score` gives."""
    rng = np.random.default_rng(3)
    groups = ["english", "english/hard_prompt", "chinese/if_prompt", "other/hard_prompt+math_prompt"]
    recs = [PromptScores(str(i), groups[i % 4], (float(rng.normal()),), (float(rng.normal()),)) for i in range(40)]
    s = ppe_preference.score(recs, seed=0)
    by = {g: [r for r in recs if r.group == g] for g in groups}
    means = {g: ppe_preference.prompt_values(rs).mean(axis=0) for g, rs in by.items()}
    numbers = ppe_preference.headline_numbers(means, {g: len(rs) for g, rs in by.items()})
    assert numbers.pop("accuracy") == pytest.approx(s.accuracy)
    assert numbers == pytest.approx(s.categories)


def test_the_preference_summary_round_trips_and_an_old_one_reads_back():
    bench = benchmarks.get("ppe-preference")
    recs = [PromptScores("a", "english/hard_prompt", (2.0,), (1.0,)), PromptScores("b", "chinese", (1.0,), (1.0,))]
    typed = ppe_preference.score(recs, seed=0, samples=20)
    text = json.dumps(bench.summary_json(typed), indent=2)  # as summary.json holds it
    again = bench.read_summary(json.loads(text))
    assert again == typed and json.dumps(bench.summary_json(again), indent=2) == text
    keys = ["benchmark", "categories", "category_n", "n", "accuracy", "ci", "tied_rewards"]
    assert list(json.loads(text)) == keys and typed.tied_rewards == 1  # the order score() has always written
    # a judge's summary has no tied_rewards: written without it, it reads back unset (and no caption)
    judged = ppe_preference.score([PromptScores("a", "english", (), (), results=(0.5,))], seed=0, samples=20)
    old = bench.summary_json(judged)
    assert "tied_rewards" not in old
    lean = bench.read_summary(json.loads(json.dumps(old)) | {"model": "judge"})
    assert lean.tied_rewards is msgspec.UNSET and bench.table(lean, "t").caption is None
    assert bench.summary_json(lean) == old
    empty = bench.read_summary({"benchmark": "ppe-preference"})  # a run that scored nothing
    assert bench.scored_groups(empty) == [] and bench.headline(empty) == [("accuracy", None)]


def test_a_run_rescores_to_the_same_numbers_and_says_what_it_left_out(preference_dir, tmp_path):
    out = tmp_path / "run"
    summary = longer_run("ppe-preference", preference_dir, out)
    assert summary["accuracy"] == pytest.approx(3 / 5) and summary["complete"] is True
    assert summary["categories"]["hard_prompt"] == 0.5 and summary["categories"]["non_english_prompt"] == 2 / 3
    # PPE's battle categories: longer-wins loses every battle a shorter answer won
    assert summary["categories"]["shorter_won"] == 0.0 and summary["category_n"]["shorter_won"] == 2
    assert summary["categories"]["similar_response"] == 1.0 and summary["category_n"]["similar_response"] == 1
    assert summary["unscored"]["records"] == 2 and "human ties" in summary["unscored"]["why"]
    line = json.loads((out / "samples.jsonl").read_text().splitlines()[1])
    assert line == {"benchmark": "ppe-preference", "question_id": "q2", "group": "chinese/hard_prompt+shorter_won",
                    "winner": "model_b", "score_1": len(LONG), "score_2": len(SHORT), "credit": 0.0}  # fmt: skip
    again = json.loads(cli("score", str(out / "samples.jsonl"), "--json").stdout)
    for key in ("accuracy", "categories", "category_n", "ci"):
        assert again[key] == summary[key]


def test_a_winner_that_is_no_vote_is_one_error_naming_the_record(tmp_path):
    write_split(tmp_path / "bad", "test", [BATTLES[0] | {"winner": "model_c"}], PREFERENCE_SCHEMA)
    proc = cli("run", "--model", "baseline:longer", "--benchmark", "ppe-preference", "--data", str(tmp_path / "bad"),
               "--out", str(tmp_path / "r"))  # fmt: skip
    line = one_error_line(proc, 2)
    assert "test-00000-of-00001.parquet: record 0" in line and "winner 'model_c' is none of" in line


# --- PPE Correctness --------------------------------------------------------------------------------------------


def test_correctness_loader_reads_every_set_s_hub_schema(correctness_dir):
    data = load_dataset("ppe-correctness", correctness_dir)
    assert data.missing == [] and len(data.examples) == 7
    by_id = {ex.id: ex for ex in data.examples}
    ex = by_id["mmlu_pro:mmlu_pro-0000:gpt-4o-mini-2024-07-18"]
    assert ex.group == "mmlu_pro" and len(ex.chosen) == 2 and len(ex.rejected) == K - 2
    assert ex.chosen == (RIGHT, "Right.") and ex.rejected[:2] == (WRONG + " " + WRONG, "No.")
    assert ex.pairs == ((0, 1), (1, 0))  # [0, 3] and [2, 1] as (correct, incorrect) positions
    assert {e.group for e in data.examples} == set(ppec_c.SETS)
    assert by_id["gpqa:gpqa-0001:gpt-4o-mini-2024-07-18"].pairs == ()


def test_correctness_accuracy_is_pair_weighted_per_set_and_the_sets_plain_mean(correctness_dir, tmp_path):
    out = tmp_path / "run"
    s = longer_run("ppe-correctness", correctness_dir, out)
    assert s["sets"] == {"mmlu_pro": 2 / 3, "math": 0.0, "gpqa": 1.0, "ifeval": 0.5, "mbpp_plus": 0.0}
    assert s["pairs"] == {"mmlu_pro": 3, "math": 2, "gpqa": 1, "ifeval": 4, "mbpp_plus": 1}
    assert s["accuracy"] == pytest.approx((2 / 3 + 0 + 1 + 0.5 + 0) / 5) and s["complete"] is True
    # longer wins: the longest answer (wrong) tops every row: best-of-K ends at 0; K = 1 is the share correct
    for bok in s["best_of_k"].values():
        assert len(bok["curve"]) == K and bok["curve"][0] == pytest.approx(2 / K) and bok["end"] == 0.0
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    line = next(x for x in lines if x["question_id"] == "mmlu_pro-0000")
    assert line["sampled_conflict_pairs"] == [[0, 3], [1, 2]] and line["scores"][:4] == [True, True, False, False]
    assert [line[f"score_{i}"] for i in (1, 2, 3, 4)] == [len(RIGHT), 6, 2 * len(WRONG) + 1, 3]
    again = json.loads(cli("score", str(out / "samples.jsonl"), "--json").stdout)
    for key in ("sets", "pairs", "accuracy", "best_of_k", "ci"):
        assert again[key] == s[key]


def test_a_missing_set_makes_the_run_partial(correctness_dir, tmp_path):
    partial = write_correctness(tmp_path / "two", {k: CORRECTNESS[k] for k in ("math", "gpqa")})
    proc = cli("run", "--model", "baseline:longer", "--benchmark", "ppe-correctness", "--data", str(partial),
               "--json", "--out", str(tmp_path / "r"))  # fmt: skip
    s = json.loads(proc.stdout)
    assert s["complete"] is False and "no data for set(s) mmlu_pro, ifeval, mbpp_plus" in s["partial"][0]
    assert s["accuracy"] == 0.5  # the mean of the sets present; marked partial wherever it is shown


def test_pair_credits_count_equal_rewards_half_and_a_nan_is_an_error():
    rec = PromptScores("r", "math", (1.0, 2.0), (1.0, 3.0), pairs=((0, 0), (1, 0), (1, 1)))
    assert list(ppe_correctness.pair_credits(rec)) == [0.5, 1.0, 0.0]
    s = ppe_correctness.score([rec], seed=0)
    assert s.sets == {"math": 0.5} and s.accuracy == 0.5
    bad = PromptScores("x", "math", (float("nan"),), (1.0,), pairs=((0, 0),))
    with pytest.raises(Exception, match="prompt x: score_chosen holds a non-finite score"):
        ppe_correctness.score([bad], seed=0)


def enumerated_best_of_k(rewards: list[int], correct: list[bool], k: int) -> Fraction:
    """The definition, by enumeration: every K-subset alike; the top reward's answers in it picked alike."""
    total, count = Fraction(0), 0
    for subset in itertools.combinations(range(len(rewards)), k):
        top = max(rewards[i] for i in subset)
        tops = [i for i in subset if rewards[i] == top]
        total += Fraction(sum(correct[i] for i in tops), len(tops))
        count += 1
    return total / count


@pytest.mark.parametrize("seed", range(6))
def test_best_of_k_equals_the_enumeration_of_every_subset_ties_included(seed):
    rng = np.random.default_rng(seed)
    n = 8
    rewards = [int(v) for v in rng.integers(0, 4, size=n)]  # few values: ties at the top happen
    correct = [bool(v) for v in rng.integers(0, 2, size=n)]
    curve = ppe_correctness.best_of_k_curve(np.asarray(rewards, float), np.asarray(correct, float))
    for k in range(1, n + 1):
        assert curve[k - 1] == pytest.approx(float(enumerated_best_of_k(rewards, correct, k)), abs=1e-12)
    assert curve[0] == pytest.approx(sum(correct) / n)


def test_the_correctness_summary_round_trips_and_an_old_one_reads_back():
    bench = benchmarks.get("ppe-correctness")
    recs = [PromptScores("r", "math", (1.0, 2.0), (1.0, 3.0), pairs=((0, 0), (1, 0))),
            PromptScores("s", "gpqa", (4.0,), (1.0, 2.0), pairs=((0, 1),))]  # fmt: skip
    typed = ppe_correctness.score(recs, seed=0, samples=20)
    text = json.dumps(bench.summary_json(typed), indent=2)  # as summary.json holds it
    again = bench.read_summary(json.loads(text))
    assert again == typed and json.dumps(bench.summary_json(again), indent=2) == text
    keys = ["benchmark", "sets", "n", "pairs", "best_of_k", "accuracy", "ci"]
    assert list(json.loads(text)) == keys  # the order score() has always written them in
    assert list(json.loads(text)["best_of_k"]["math"]) == ["curve", "end", "max"]
    # a judge's summary has no best-of-K: written without it, it reads back unset (and no best-of-K columns)
    judged = [PromptScores("r", "math", (), (), results=(1.0, 0.5), pairs=((0, 0), (1, 0)))]
    old = bench.summary_json(ppe_correctness.score(judged, seed=0, samples=20))
    assert "best_of_k" not in old
    lean = bench.read_summary(json.loads(json.dumps(old)) | {"model": "judge"})
    assert lean.best_of_k is msgspec.UNSET and bench.summary_json(lean) == old
    assert [c.header for c in bench.table(lean, "t").columns] == ["set", "accuracy", "pairs", "rows"]
    empty = bench.read_summary({"benchmark": "ppe-correctness"})  # a run that scored nothing
    assert bench.scored_groups(empty) == [] and bench.headline_intervals(empty) == {}


def test_correctness_headline_numbers_from_set_means_equal_the_summary():
    rng = np.random.default_rng(5)
    recs = []
    for i in range(30):
        name = ppec_c.SETS[i % 5]
        c, r = tuple(rng.normal(size=3)), tuple(rng.normal(size=4))
        m = 1 + i % 3
        pairs = tuple((int(a), int(b)) for a, b in zip(rng.integers(0, 3, m), rng.integers(0, 4, m), strict=True))
        recs.append(PromptScores(str(i), name, c, r, pairs=pairs))
    s = ppe_correctness.score(recs, seed=0)
    by = {n: [r for r in recs if r.group == n] for n in ppec_c.SETS}
    means = {n: ppe_correctness.prompt_values(rs).mean(axis=0) for n, rs in by.items()}
    numbers = ppe_correctness.headline_numbers(means, {n: len(rs) for n, rs in by.items()})
    assert numbers.pop("accuracy") == pytest.approx(s.accuracy) and numbers == pytest.approx(s.sets)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sampled_conflict_pairs": [[0, 1]]}, "'sampled_conflict_pairs[0]' = [0, 1] is no conflict pair"),
        ({"sampled_conflict_pairs": [[0, 40]]}, "'sampled_conflict_pairs[0]' must be two answer indices in 0..31"),
        ({"scores": [True] * 31}, "'scores' has 31 values but the answers are 32"),
        ({"scores": ["yes"] * K}, "'scores' must be a non-empty list of booleans"),
    ],
)
def test_a_malformed_row_is_one_error_naming_file_and_record(tmp_path, change, message):
    rec = row("math", 0, [[0, 2]]) | change
    path = tmp_path / "math.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    proc = cli("run", "--model", "baseline:longer", "--benchmark", "ppe-correctness", "--data", str(path),
               "--out", str(tmp_path / "r"))  # fmt: skip
    line = one_error_line(proc, 2)
    assert f"{path}: record 0" in line and message in line


def test_a_row_of_no_known_set_is_one_error(tmp_path):
    rec = {k: v for k, v in row("math", 0, []).items() if k != "level"}
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    proc = cli("run", "--model", "baseline:longer", "--benchmark", "ppe-correctness", "--data", str(path),
               "--out", str(tmp_path / "r"))  # fmt: skip
    assert "none of the fields that name a PPE correctness set" in one_error_line(proc, 2)


@pytest.mark.slow
def test_compare_pairs_two_runs_on_both_benchmarks(preference_dir, correctness_dir, tmp_path):
    cases = (("ppe-preference", preference_dir, ("hard_prompt", "accuracy")),
             ("ppe-correctness", correctness_dir, (*ppec_c.SETS, "accuracy")))  # fmt: skip
    for bench, data, columns in cases:
        dirs = []
        for model in ("baseline:longer", "baseline:random"):
            out = tmp_path / bench / model.split(":")[1]
            proc = cli("run", "--model", model, "--benchmark", bench, "--data", str(data), "--out", str(out))
            assert proc.returncode == 0, proc.stderr
            dirs.append(str(out))
        proc = cli("compare", *dirs, "--format", "csv")
        assert proc.returncode == 0, proc.stderr
        header = proc.stdout.splitlines()[0].split(",")
        assert all(f"{c} diff" in header and f"{c} p" in header for c in columns), header  # paired tests


@pytest.mark.slow
def test_the_report_page_shows_only_the_pairs_a_run_lost(correctness_dir, tmp_path):
    """PPE Correctness on the page: the rows with a lost (or tied) sampled pair, only those pairs and the answers
    they compare embedded (not a row's 32 answers), each shown against the answer that beat it."""
    from helpers_report import chromium, open_page, shown_ids

    from rmbench_client.report import page as html

    out = tmp_path / "run"
    longer_run("ppe-correctness", correctness_dir, out)
    data = html.build([str(out)])
    by_id = {p["id"]: p for p in data["prompts"]}
    assert sorted(by_id) == sorted(f"{n}:{n}-0000:gpt-4o-mini-2024-07-18" for n in ("mmlu_pro", "math", "ifeval",
                                                                                   "mbpp_plus"))  # fmt: skip
    ifeval = by_id["ifeval:ifeval-0000:gpt-4o-mini-2024-07-18"]  # pairs (1,3) won, (0,2) lost, (0,3) won, (1,2) lost
    assert ifeval["c"] == [RIGHT, "Right."] and ifeval["r"] == [WRONG + " " + WRONG] and ifeval["x"] == [[0, 0], [1, 0]]
    assert data["runs"][0]["scores"][ifeval["id"]] == [len(RIGHT), 6, 2 * len(WRONG) + 1]
    page_file = out / "report.html"
    assert cli("report", str(out)).returncode == 0
    with chromium() as browser:
        page, requests, errors = open_page(browser, page_file)
        assert errors == [] and requests == []
        assert sorted(shown_ids(page)) == sorted(by_id)
        item = f'#list .item[data-id="{ifeval["id"]}"]'
        assert WRONG in page.inner_text(item)
        chips = page.query_selector_all(f"{item} .chip")  # two lost pairs: pick either
        assert [c.inner_text() for c in chips] == ["1 vs 1", "2 vs 1"]
        page.click(f'{item} .chip[data-cell="1,0"]')
        assert page.get_attribute(item, "data-cell") == "1,0" and "Right." in page.inner_text(f"{item} .side.chosen")


def test_the_preference_page_lists_the_battles_a_run_lost(preference_dir, tmp_path):
    from rmbench_client.report import page as html

    out = tmp_path / "run"
    longer_run("ppe-preference", preference_dir, out)  # longer wins: lost where model_b won (q2, q6)
    data = html.build([str(out)])
    assert [p["id"] for p in data["prompts"]] == ["q2", "q6"] and data["prompts"][0]["c"] == [SHORT]


def test_the_page_keeps_each_embedded_pairs_details():
    """A best-of-K row on the page holds only its lost pairs' answers: DPO's per-answer numbers and a judge's
    per-pair answers are cut to the same."""
    from rmbench_client.examples import Example
    from rmbench_client.report.page import shown_pairs

    ex = Example("r", "ppe-correctness", "math", "q", ("c0", "c1"), ("r0", "r1", "r2"), pairs=((0, 2), (1, 0), (1, 1)))
    dpo = PromptScores("r", "math", (1.0, 5.0), (2.0, 0.0, 5.0), pairs=ex.pairs,
                       details={"policy_logprob_sum": {"chosen": [-1, -2], "rejected": [-3, -4, -5]}})  # fmt: skip
    judge = PromptScores("r", "math", (), (), (1.0, 1.0, 0.5), pairs=ex.pairs, details={"answers": ["a", "b", "c"]})
    view = shown_pairs(ex, [dpo, judge])  # lost or tied: (0, 2) by the rewards, (1, 1) by the judge
    assert (view.pairs, view.chosen, view.rejected) == ([0, 2], [0, 1], [1, 2])
    assert view.example(ex) == {"c": ["c0", "c1"], "r": ["r1", "r2"], "x": [[0, 1], [1, 0]]}
    cut = view.scores(dpo)
    assert cut.rejected == (0.0, 5.0) and cut.details == {
        "policy_logprob_sum": {"chosen": [-1, -2], "rejected": [-4, -5]}
    }
    assert view.scores(judge).results == (1.0, 0.5) and view.scores(judge).details == {"answers": ["a", "c"]}


def test_data_fetch_puts_each_correctness_set_in_its_own_folder(tmp_path):
    files = {}
    for name, repo in ppec_c.HUB_REPOS.items():
        shard = write_split(tmp_path / "build" / name, "train", CORRECTNESS[name], correctness_schema(name))
        files[repo] = {f"data/{shard.name}": shard.read_bytes(), "README.md": b"---\n---\n"}
    pref = write_preference(tmp_path / "build" / "pref", BATTLES)
    files[ppep_c.HUB_REPO] = {f"data/{pref.name}": pref.read_bytes()}
    with serve_hub(files) as fake:
        env = hub_env(tmp_path, fake.url)
        proc = cli("data", "fetch", "ppe-correctness", "ppe-preference", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    root = tmp_path / "data" / "ppe-correctness"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet")) == sorted(
        f"{name}/train-00000-of-00001.parquet" for name in ppec_c.SETS
    )
    assert "ppe-correctness: 7 prompts" in proc.stdout and "ppe-preference: 5 prompts" in proc.stdout
    listing = {e["benchmark"]: e for e in json.loads(cli("data", "list", "--json", cwd=tmp_path, env=env).stdout)}
    assert len(listing["ppe-correctness"]["files"]) == 5 and listing["ppe-correctness"]["missing_groups"] == []


def test_headline_columns_name_each_set_then_the_mean():
    bench = benchmarks.get("ppe-correctness")
    summary = bench.read_summary({"benchmark": "ppe-correctness", "sets": {"math": 0.5}, "accuracy": 0.5})
    columns = bench.headline(summary)
    assert [c for c, _ in columns] == [*ppec_c.SETS, "accuracy"]
    assert dict(columns)["math"] == 0.5 and dict(columns)["gpqa"] is None
    assert math.isnan(ppe_correctness.score([], seed=0).accuracy)
