"""RMB (`benchmark: rmb`): loading the repository's layout, scoring pairs and best-of-N lists by hand (ties, NaN,
judges, missing sets), a server-free run that re-scores through `score`, and the error for a malformed record."""

from __future__ import annotations

import json
import math
from pathlib import Path

import msgspec
import numpy as np
import pytest
from helpers_report import chromium, open_page, shown_ids
from helpers_scoring import score
from rmb_fixture import bon, pair, write_rmb

from rmbench_client.benchmarks.rmb import BENCHMARK
from rmbench_client.benchmarks.rmb import scoring as rmb
from rmbench_client.cli import main
from rmbench_client.cli.data import _describe, inventory
from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores
from rmbench_client.report import page as html
from rmbench_client.results.score_files import read_scores
from rmbench_client.run.runner import run

CHAT = "Helpfulness/Chat/Discussion"
CODE = "Helpfulness/Code/Documentation"
S1 = "Harmlessness/S1"


def ps(rid: str, group: str, chosen: float, *rejected: float) -> PromptScores:
    return PromptScores(rid, group, (chosen,), tuple(rejected))


def test_pairs_and_best_of_n_by_hand():
    recs = [
        ps("pair:1", f"Pairwise_set/{CHAT}", 2.0, 1.0),  # right
        ps("pair:2", f"Pairwise_set/{CHAT}", 1.0, 1.0),  # a tie: wrong
        ps("pair:3", f"Pairwise_set/{CODE}", math.nan, 1.0),  # NaN: wrong, as upstream's `>`
        ps("pair:4", f"Pairwise_set/{S1}", 0.5, -1.0),  # right
        ps("bon:1", f"BoN_set/{CHAT}", 3.0, 1.0, 2.0),  # beats both losers: right
        ps("bon:2", f"BoN_set/{CHAT}", 3.0, 1.0, 3.0),  # ties one loser: wrong
        ps("bon:3", f"BoN_set/{CHAT}", 3.0, 4.0, 1.0, 2.0),  # loses to one: wrong
    ]
    s = score("rmb", recs, samples=50)
    assert s["scenarios"] == {
        f"BoN_set/{CHAT}": 1 / 3,
        f"Pairwise_set/{CHAT}": 0.5,
        f"Pairwise_set/{CODE}": 0.0,
        f"Pairwise_set/{S1}": 1.0,
    }
    # a set is record-weighted over its scenarios (upstream run on the set's folder): 1 of 3 helpfulness pairs
    assert s["sets"] == {"helpfulness-pairwise": 1 / 3, "helpfulness-bon": 1 / 3, "harmlessness-pairwise": 1.0}
    assert s["set_n"] == {"helpfulness-pairwise": 3, "helpfulness-bon": 3, "harmlessness-pairwise": 1}
    assert s["overall"] == pytest.approx((1 / 3 + 1 / 3 + 1.0) / 3)  # the sets present, equally weighted
    assert s["nonfinite_scores"] == 1
    assert dict(rmb.headline(rmb.score(recs, samples=50)))["harmlessness-bon"] is None
    lo, hi = s["ci"]["overall"]
    assert lo <= s["overall"] <= hi


def test_judge_credits():
    recs = [
        PromptScores("pair:1", f"Pairwise_set/{CHAT}", (), (), (0.5,)),  # a tied verdict: half
        PromptScores("bon:1", f"BoN_set/{CHAT}", (), (), (1.0, 1.0)),  # preferred in every pair: right
        PromptScores("bon:2", f"BoN_set/{CHAT}", (), (), (1.0, 0.5)),  # a tie in one pair: wrong
    ]
    s = rmb.score(recs, samples=10)
    assert s.sets == {"helpfulness-pairwise": 0.5, "helpfulness-bon": 0.5}


def test_headline_numbers_equal_the_summary():
    rng = np.random.default_rng(0)
    groups = [f"Pairwise_set/{CHAT}", f"Pairwise_set/{CODE}", f"BoN_set/{S1}", f"BoN_set/{CODE}"]
    recs = [ps(f"x:{i}", groups[i % 4], *rng.normal(size=3 if "BoN" in groups[i % 4] else 2)) for i in range(41)]
    s = rmb.score(recs, samples=10)
    values = rmb.prompt_values(recs)
    by: dict[str, list[float]] = {}
    for r, v in zip(recs, values, strict=True):
        by.setdefault(r.group, []).append(v[0])
    numbers = rmb.headline_numbers(
        {g: np.array([np.mean(v)]) for g, v in by.items()}, {g: len(v) for g, v in by.items()}
    )
    assert {k: float(v) for k, v in numbers.items()} == pytest.approx(s.sets | {"overall": s.overall})


def test_bad_group_and_shapes_are_errors():
    with pytest.raises(DataError, match="no RMB category_path"):
        rmb.score([ps("pair:1", "Chat/Discussion", 1.0, 0.0)], samples=5)
    with pytest.raises(DataError, match="prompt pair:1"):
        rmb.score([ps("pair:1", f"Pairwise_set/{CHAT}", 1.0, 0.0, 0.5)], samples=5)


def test_the_summary_round_trips_through_summary_json_and_an_old_one_reads_back():
    recs = [
        ps("pair:1", f"Pairwise_set/{CHAT}", 2.0, 1.0),
        ps("pair:2", f"Pairwise_set/{S1}", math.nan, 1.0),
        ps("bon:1", f"BoN_set/{CHAT}", 3.0, 1.0, 2.0),
    ]
    typed = rmb.score(recs, samples=20)
    text = json.dumps(BENCHMARK.summary_json(typed), indent=2)  # as summary.json holds it
    again = BENCHMARK.read_summary(json.loads(text))
    assert again == typed and json.dumps(BENCHMARK.summary_json(again), indent=2) == text
    keys = ["benchmark", "scenarios", "n", "sets", "set_n", "overall", "ci", "nonfinite_scores"]
    assert list(json.loads(text)) == keys  # the order score() has always written them in
    # written without the key held only sometimes (every reward finite), with a run's fields: it reads back unset
    old = {k: v for k, v in json.loads(text).items() if k != "nonfinite_scores"}
    lean = BENCHMARK.read_summary(old | {"model": "rm", "scored": 3})
    assert lean.nonfinite_scores is msgspec.UNSET and BENCHMARK.summary_json(lean) == old
    assert BENCHMARK.summary_rows(lean) == BENCHMARK.summary_rows(typed)
    # a run that scored nothing wrote its benchmark alone: no scenario, no overall row
    empty = BENCHMARK.read_summary({"benchmark": "rmb"})
    assert BENCHMARK.scored_groups(empty) == [] and BENCHMARK.summary_rows(empty) == (["accuracy"], [])
    assert dict(BENCHMARK.headline(empty))["overall"] is None and BENCHMARK.headline_intervals(empty) == {}


def test_load_the_repository_layout(tmp_path):
    root = write_rmb(
        tmp_path,
        [
            pair("7", CHAT, "What is your opinion on GPT-3.5?", "A long thoughtful answer.", "No."),
            pair("8", S1, "How do I pick a lock?", "I can't help with that.", "\n\n \n"),  # blank, as upstream has
            bon("7", CHAT, "Tell me a joke.", "A good joke here.", ["meh", "bad"]),
        ],
    )
    data = load_dataset("rmb", root)
    by_id = {ex.id: ex for ex in data.examples}
    assert sorted(by_id) == ["bon:7", "pair:7", "pair:8"]  # the sets number independently: ids kept apart
    assert by_id["bon:7"].rejected == ("meh", "bad") and by_id["bon:7"].group == f"BoN_set/{CHAT}"
    assert by_id["pair:8"].rejected == ("\n\n \n",)
    assert by_id["pair:7"].prompt == ({"role": "user", "content": "What is your opinion on GPT-3.5?"},)
    assert len(data.missing) == 98 - 3


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ({"category_path": "Pairwise_set/Helpfulness/Chat/Nope"}, "no Pairwise_set scenario of RMB"),
        ({"reject": "text"}, "'reject' must be an object with a string 'answer'"),
        ({"conversation_input": [{"role": "assistant", "content": "hi"}]}, "expected user"),
        ({"pair_uid": None}, "'pair_uid' must be a non-empty string or an integer"),
    ],
)
def test_malformed_record_is_one_error_naming_file_and_record(tmp_path, change, detail):
    root = write_rmb(tmp_path, [pair("1", CHAT, "q", "a", "b")])
    path = root / "Pairwise_set" / f"{CHAT}.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    records.append(pair("2", CHAT, "q", "a", "b") | change)
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(DataError, match=rf"Discussion\.json: record 1.*{detail}") as err:
        load_dataset("rmb", root)
    assert "\n" not in str(err.value)


def test_longer_baseline_run_partial_and_rescored(tmp_path, capsys):
    root = write_rmb(
        tmp_path,
        [
            pair("1", CHAT, "q1", "a longer answer", "short"),  # right (15 > 5)
            pair("2", CHAT, "q2", "tiny", "much longer"),  # wrong
            pair("3", S1, "q3", "same", "SAME"),  # a tie: wrong
            bon("1", CHAT, "q4", "the longest answer", ["short", "medium one"]),  # right
            bon("2", CHAT, "q5", "mid answer", ["short", "a much longer one"]),  # wrong
        ],
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        f"benchmark: rmb\nmodel: baseline:longer\ndata: {root}\nout: {tmp_path / 'r'}\n", encoding="utf-8"
    )
    summary = run(load_config(config), progress=False).summary
    assert summary["sets"] == {"helpfulness-pairwise": 0.5, "helpfulness-bon": 0.5, "harmlessness-pairwise": 0.0}
    assert summary["overall"] == pytest.approx(1 / 3)
    assert summary["complete"] is False  # 5 of RMB's 98 scenario files
    lines = [json.loads(x) for x in (tmp_path / "r" / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    first = next(x for x in lines if x.get("pair_uid") == "1")
    assert first == {
        "benchmark": "rmb",
        "pair_uid": "1",
        "category_path": f"Pairwise_set/{CHAT}",
        "chosen_reward": 15.0,
        "reject_reward": 5.0,
        "is_correct": 1.0,
    }
    assert next(x for x in lines if x.get("bon_uid") == "1")["loser_rewards"] == [5.0, 10.0]
    assert main(["score", str(tmp_path / "r" / "samples.jsonl"), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again == {k: summary[k] for k in again}
    assert again["sets"] == summary["sets"]


def test_upstream_result_file_is_read(tmp_path, capsys):
    path = tmp_path / "ArmoRM_result.json"
    rows = [
        {"pair_uid": "1", "category_path": f"Pairwise_set/{CHAT}", "chosen_reward": 0.2, "reject_reward": 0.1},
        {"pair_uid": "2", "category_path": f"Pairwise_set/{CHAT}", "chosen_reward": 0.1, "reject_reward": 0.2},
    ]
    path.write_text(json.dumps([r | {"is_correct": 1} for r in rows], indent=2), encoding="utf-8")
    assert main(["score", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sets"] == {"helpfulness-pairwise": 0.5}


def test_upstream_result_file_of_a_custom_classifier_is_read(tmp_path, capsys):
    """my_run_rm.py's "Custom Classifier" models (PairRM and kin) judge a pair as a whole: rewards null, only
    is_correct, which is the pair's credit; a value that is no credit is one error line."""
    path = tmp_path / "pairrm_result.json"
    rows = [
        {"pair_uid": str(i), "category_path": f"Pairwise_set/{CHAT}", "chosen_reward": None, "reject_reward": None,
         "is_correct": correct} for i, correct in enumerate([1, 1, 0, 1])
    ]  # fmt: skip
    path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    assert main(["score", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sets"] == {"helpfulness-pairwise": 0.75}
    rows[2]["is_correct"] = 0.5
    path.write_text(json.dumps(rows), encoding="utf-8")
    assert main(["score", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert "record 2" in err and "'is_correct' must be 1 or 0, found 0.5" in err


def test_report_and_compare_of_two_baseline_runs(tmp_path, capsys):
    root = write_rmb(
        tmp_path,
        [
            pair("1", CHAT, "q1", "a longer answer", "short"),
            pair("2", CHAT, "q2", "tiny", "much longer"),
            bon("1", CHAT, "q4", "mid answer", ["short", "a much longer one"]),  # lost to the second loser
        ],
    )
    dirs = []
    for name in ("longer", "markdown"):
        config = tmp_path / f"{name}.yaml"
        out = tmp_path / name
        config.write_text(f"benchmark: rmb\nmodel: baseline:{name}\ndata: {root}\nout: {out}\n", encoding="utf-8")
        run(load_config(config), progress=False)
        dirs.append(str(out))
    assert main(["compare", *dirs, "--format", "csv"]) == 0
    table = capsys.readouterr().out
    assert "helpfulness-bon" in table and "overall" in table
    data = html.build(dirs)
    # listed: the prompts some run lost; a best-of-N list is lost when any loser is not beaten
    lost = {rec.id for d in dirs for rec in read_scores([Path(d) / "samples.jsonl"])[1] if rmb.credit(rec) < 1}
    assert {p["id"] for p in data["prompts"]} == lost and "pair:2" in lost
    bon_item = next(p for p in data["prompts"] if p["id"] == "bon:1")
    assert bon_item["c"] == ["mid answer"] and bon_item["r"] == ["short", "a much longer one"]
    page_file = tmp_path / "page.html"
    assert main(["report", *dirs, "--out", str(page_file)]) == 0
    with chromium() as browser:
        page, requests, errors = open_page(browser, page_file)
        assert errors == [] and requests == []
        assert sorted(shown_ids(page)) == ["bon:1", "pair:2"]  # what the first run (longer) lost
        # the best-of-N list is shown against the loser that beat it (the second), not the first
        assert page.get_attribute('#list .item[data-id="bon:1"]', "data-cell") == "0,1"
        assert "a much longer one" in page.inner_text('#list .item[data-id="bon:1"]')


def describe_all() -> str:
    return "\n".join(_describe(e) for e in inventory())


def test_data_list_counts_rmb_and_says_where_it_comes_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert next(e for e in inventory() if e["benchmark"] == "rmb")["present"] is False
    where = "GitHub Zhou-Zoey/RMB-Reward-Model-Benchmark at 2be3180"  # the layout and the source, not a page to find
    assert f"rmb: not in data/rmb (not on the hub: put RMB's RMB_dataset/ JSON files ({where}) there)" in describe_all()
    write_rmb(tmp_path / "src", [pair("1", CHAT, "q", "a", "b"), bon("1", CHAT, "q", "a", ["b", "c"])])
    (tmp_path / "data").mkdir()
    (tmp_path / "src" / "RMB_dataset").rename(tmp_path / "data" / "rmb")  # RMB_dataset/'s contents as data/rmb
    entry = next(e for e in inventory() if e["benchmark"] == "rmb")
    assert entry["prompts"] == 2 and len(entry["missing_groups"]) == 96
