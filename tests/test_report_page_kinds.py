"""`rmbench-client report` for every model kind and benchmark: DPO log-probs and judge answers, RewardBench's lost
pairs by subset and section, your own pairs with their field names; RewardBench 2 says why it has no page yet."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers_data import require_rmbench
from helpers_report import chromium, constructed_run, open_page, samples, shown_ids
from new_benchmarks_fixture import write_if, write_rewardmath

from rmbench_client import constants as C
from rmbench_client.cli import main
from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.run.runner import run


@pytest.fixture(scope="module")
def browser(rewardbench_run, pairwise_run, new_kind_runs) -> Iterator:
    with chromium() as b:
        yield b


@pytest.mark.slow
def test_dpo_log_probs_and_judge_answers_are_shown(browser, tmp_path):
    chat = load_dataset("rm-bench", require_rmbench() / "chat_filtered.json").examples[:3]
    dpo_lines, judge_lines = [], []
    for k, ex in enumerate(chat):
        policy = {"chosen": [-10.0 - k, -20.0, -30.0], "rejected": [-5.0, -15.0, -25.0]}
        reference = {"chosen": [-11.0, -21.0, -31.0], "rejected": [-6.5 - k, -16.0, -26.0]}
        tokens = {"chosen": [10, 20, 30], "rejected": [11, 21, 31]}
        chosen = [p - r for p, r in zip(policy["chosen"], reference["chosen"], strict=True)]
        rejected = [p - r for p, r in zip(policy["rejected"], reference["rejected"], strict=True)]
        base = {"id": ex.id, "domain": "chat", "subdomain": "chat"}
        details = {"policy_logprob_sum": policy, "reference_logprob_sum": reference, "response_tokens": tokens}
        dpo_lines.append(base | {"score_chosen": chosen, "score_rejected": rejected, "details": details})
        answers = [
            f"{ex.id}: verdict on chosen {i} vs rejected {j} [[{'B' if i == j else 'A'}]]"
            for i in range(3)
            for j in range(3)
        ]
        results = [[0.0 if i == j else 1.0 for j in range(3)] for i in range(3)]
        judge_lines.append(base | {"results": results, "details": {"answers": answers}})
    dpo = constructed_run(tmp_path, "dpo-model", "dpo", dpo_lines)
    judge = constructed_run(tmp_path, "judge-model", "judge", judge_lines)

    failed = [{"id": "x1", "reason": "timeout", "endpoint": "http://a:1"}, {"id": "x2", "reason": "timeout",
              "endpoint": "http://a:1"}, {"id": "x3", "reason": "no data"}]  # fmt: skip
    (dpo / C.FAILURES_FILE).write_text("".join(json.dumps(f) + "\n" for f in failed), encoding="utf-8")
    assert main(["report", str(dpo), "--out", str(tmp_path / "dpo.html")]) == 0
    page, _, errors = open_page(browser, tmp_path / "dpo.html")
    by_endpoint = page.eval_on_selector_all("#failed-by-endpoint td", "els => els.map(e => e.textContent)")
    assert by_endpoint == ["http://a:1", "2", "(no endpoint named)", "1"]  # the failures grouped by endpoint
    page.select_option("#f-cell", "0,0")  # chosen concise: -1 - k; rejected concise: 1.5 + k, lost on every prompt
    assert sorted(shown_ids(page)) == sorted(ex.id for ex in chat)
    item = page.query_selector(f"#list .item[data-id='{chat[1].id}']")
    rows = [[c.text_content() for c in tr.query_selector_all("td")] for tr in item.query_selector_all("table.dpo tr")]
    assert rows[1:] == [
        ["policy log-prob sum", "-11", "-5"],
        ["reference log-prob sum", "-11", "-7.500"],
        ["response tokens", "10", "11"],
    ]

    assert main(["report", str(judge), "--out", str(tmp_path / "judge.html")]) == 0
    page, _, errors2 = open_page(browser, tmp_path / "judge.html")
    page.select_option("#f-cell", "2,2")  # the judge gave every same-style comparison to the rejected response
    assert sorted(shown_ids(page)) == sorted(ex.id for ex in chat)
    item = page.query_selector(f"#list .item[data-id='{chat[0].id}']")
    assert item.query_selector(".answer pre").text_content() == f"{chat[0].id}: verdict on chosen 2 vs rejected 2 [[B]]"
    page.select_option("#f-cell", "0,1")
    assert shown_ids(page) == []  # won everywhere off the diagonal
    assert errors == errors2 == []


RB_SUBSETS = ("alpacaeval-easy", "mt-bench-med", "hep-go")  # sections Chat, Chat, Reasoning


@pytest.fixture(scope="module")
def rewardbench_run(tmp_path_factory) -> Path:
    """baseline:longer on 30 RewardBench-format records (the filtered set is not available here)."""
    tmp_path = tmp_path_factory.mktemp("rewardbench")
    subsets = RB_SUBSETS
    records = []
    for k in range(30):
        subset = subsets[k % 3]
        chosen = f"answer {k}: " + "right " * (1 + k % 7)
        rejected = f"answer {k}: " + "wrong " * (1 + (k * 5) % 9)
        records.append(
            {
                "id": k,
                "prompt": f"question {k} about {subset}",
                "chosen": chosen,
                "rejected": rejected,
                "subset": subset,
            }
        )
    data = tmp_path / "data"
    data.mkdir()
    (data / "filtered.json").write_text(json.dumps(records), encoding="utf-8")
    out = tmp_path / "run"
    cfg = load_config(
        None, {"model": "baseline:longer", "benchmark": "reward-bench", "data": str(data), "out": str(out)}
    )
    run(cfg, progress=False)
    return out


def test_rewardbench_page_lists_lost_pairs_by_subset_and_section(rewardbench_run, browser):
    """RewardBench: no matrix; the summary has subsets, sections and the score; filters by subset and section."""
    out, subsets = rewardbench_run, RB_SUBSETS
    assert main(["report", str(out)]) == 0
    page, requests, errors = open_page(browser, out / C.REPORT_FILE)
    assert not page.is_visible("#heatmap-section") and not page.is_visible("#f-cell")
    names = page.eval_on_selector_all("#summary-table td:first-child", "els => els.map(e => e.textContent)")
    assert names == [*sorted(subsets), "Chat", "Reasoning", "score"]
    recs = samples(out)
    is_lost = {rid: not r["score_chosen"] > r["score_rejected"] for rid, r in recs.items()}
    assert sorted(shown_ids(page)) == sorted(rid for rid, v in is_lost.items() if v)
    page.select_option("#f-group", "hep-go")
    assert sorted(shown_ids(page)) == sorted(rid for rid, v in is_lost.items() if v and recs[rid]["subset"] == "hep-go")
    page.select_option("#f-group", "")
    page.select_option("#f-sub", "Chat")
    chat = sorted(rid for rid, v in is_lost.items() if v and recs[rid]["subset"] != "hep-go")
    assert chat and sorted(shown_ids(page)) == chat
    rho = page.eval_on_selector_all("#style-table tr:last-child td", "els => els.map(e => e.textContent)")
    assert rho[0] == "all" and rho[1].startswith("1.00")  # length ρ: the score is the length
    assert requests == [] and errors == []


def test_rewardbench2_has_no_page_yet(tmp_path, capsys):
    d = tmp_path / "rb2"
    d.mkdir()
    (d / C.SUMMARY_FILE).write_text(json.dumps({"benchmark": "reward-bench-2", "subsets": {"Factuality": 0.5}}))
    (d / C.SAMPLES_FILE).write_text(
        json.dumps({"id": "1", "subset": "Factuality", "scores": [1, 0, 0, 0], "num_correct": 1}) + "\n"
    )
    assert main(["report", str(d)]) == 2
    err = capsys.readouterr().err
    assert err == "error: reward-bench-2: the report page lists chosen-vs-rejected comparisons, which it has not\n"


@pytest.fixture(scope="module")
def pairwise_run(tmp_path_factory) -> Path:
    """baseline:longer on a user's own pairs, whose prompt field is called "question" (mapped by data_fields)."""
    root = tmp_path_factory.mktemp("pairwise")
    records = [
        {
            "question": f"which is better, {k}?",
            "chosen": "good " * (1 + k % 4),
            "rejected": "bad " * (1 + k % 3),
            "subset": "mine-a" if k < 8 else "mine-b",
        }
        for k in range(12)
    ]
    (root / "pairs.json").write_text(json.dumps(records), encoding="utf-8")
    overrides = {
        "model": "baseline:longer",
        "benchmark": "pairwise",
        "data": str(root / "pairs.json"),
        "data_fields": {"prompt": "question"},
        "out": str(root / "run"),
    }
    run(load_config(None, overrides), progress=False)
    return root / "run"


def test_pairwise_page_reads_the_run_s_field_names(pairwise_run, browser):
    assert main(["report", str(pairwise_run)]) == 0
    page, requests, errors = open_page(browser, pairwise_run / C.REPORT_FILE)
    names = page.eval_on_selector_all("#summary-table td:first-child", "els => els.map(e => e.textContent)")
    assert names == ["mine-a", "mine-b", "accuracy", "macro average"]
    recs = samples(pairwise_run)
    lost_ids = sorted(rid for rid, r in recs.items() if not r["score_chosen"] > r["score_rejected"])
    assert lost_ids and sorted(shown_ids(page)) == lost_ids
    first = page.query_selector(f"#list .item[data-id='{lost_ids[0]}'] details.prompt pre")
    assert first.text_content() == f"which is better, {lost_ids[0]}?"
    assert requests == [] and errors == []


@pytest.fixture(scope="module")
def new_kind_runs(tmp_path_factory) -> dict[str, Path]:
    """baseline:longer on RewardMATH (best-of-N) and IF-RewardBench (ranking) records of their own layouts."""
    tmp_path = tmp_path_factory.mktemp("new-kinds")
    data = {"rewardmath": write_rewardmath(tmp_path / "rm.json", problems=7),
            "if-reward-bench": write_if(tmp_path / "if.json", instructions=9)}  # fmt: skip
    for name, path in data.items():
        cfg = {"model": "baseline:longer", "benchmark": name, "data": str(path), "out": str(tmp_path / name)}
        run(load_config(None, cfg), progress=False)
    return {name: tmp_path / name for name in data}


def test_best_of_n_and_ranking_pages_list_what_was_lost(browser, new_kind_runs):
    """RewardMATH (best-of-N): a problem is listed when its chosen solution lost or tied against any rejected one;
    IF-RewardBench (ranking): an instruction is listed when its scores misorder or tie an edge of its preference
    graph, each edge shown as a comparison of its better response with its worse."""
    for name, out in new_kind_runs.items():
        assert main(["report", str(out)]) == 0
        page, requests, errors = open_page(browser, out / C.REPORT_FILE)
        recs = samples(out)
        if name == "rewardmath":
            lost_ids = [rid for rid, r in recs.items() if not all(r["score"][0] > s for s in r["score"][1:])]
            names = page.eval_on_selector_all("#summary-table td:first-child", "els => els.map(e => e.textContent)")
            assert names[-2:] == ["all prompts", "mean of groups"] and "Algebra" in names
        else:
            lost_ids = [rid for rid, r in recs.items() if any(r["scores"][u] <= r["scores"][v] for u, v in r["pairs"])]
        assert lost_ids and sorted(shown_ids(page)) == sorted(lost_ids)
        assert requests == [] and errors == []
