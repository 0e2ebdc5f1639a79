"""`rmbench-client report`: the page, opened from a file in headless Chromium (Debian's, driven by Playwright),
with every network request refused; what its heatmap and filters list is checked against the run's samples.jsonl."""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
from helpers_data import RMBENCH_FILES, require_rmbench
from helpers_report import PER_FILE, chromium, lost, open_page, samples, shown_ids

from rmbench_client import constants as C
from rmbench_client.cli import main
from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.report import page as html
from rmbench_client.run.runner import run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """baseline:longer and baseline:random run directories over the first prompts of each RM-Bench file."""
    src = require_rmbench()
    root = tmp_path_factory.mktemp("report")
    data = root / "data"
    data.mkdir()
    for name in RMBENCH_FILES:
        records = json.loads((src / name).read_text(encoding="utf-8"))[:PER_FILE]
        (data / name).write_text(json.dumps(records), encoding="utf-8")
    out = {}
    for model in ("baseline:longer", "baseline:random"):
        cfg = load_config(None, {"model": model, "data": str(data), "out": str(root / model.split(":")[1])})
        run(cfg, progress=False)
        out[model] = root / model.split(":")[1]
    return out


@pytest.fixture(scope="module")
def browser(runs) -> Iterator:
    with chromium() as b:
        yield b


@pytest.mark.slow
def test_heatmap_hover_and_click_list_exactly_the_prompts_behind_the_cell(runs, browser, tmp_path):
    run_dir = runs["baseline:longer"]
    page_file = tmp_path / "longer.html"
    assert main(["report", str(run_dir), "--out", str(page_file)]) == 0
    text = page_file.read_text(encoding="utf-8")
    assert not re.search(r"(src|href)\s*=|<link|@import|url\(", text)  # nothing to fetch
    recs = samples(run_dir)
    page, requests, errors = open_page(browser, page_file)

    # a chat cell on which the longer-wins model both won and lost
    chat = {rid: r for rid, r in recs.items() if r["domain"] == "chat"}
    i, j = next((i, j) for i in range(3) for j in range(3) if 0 < sum(lost(r, i, j) for r in chat.values()) < len(chat))
    expected = sorted(rid for rid, r in chat.items() if lost(r, i, j))
    accuracy = 100 * (1 - len(expected) / len(chat))
    cell = f".heatmap[data-group=chat] .cell[data-i='{i}'][data-j='{j}']"
    page.hover(cell)
    tip = page.inner_text("#tip")
    assert page.is_visible("#tip")
    assert f"chosen won {accuracy:.1f}%" in tip and f"n = {len(chat)}" in tip
    assert f"lost or tied on {len(expected)} prompts" in tip
    assert page.inner_text(cell) == f"{accuracy:.1f}"

    page.click(cell)
    assert page.inner_text("#list-count").startswith(f"{len(expected)} prompts")
    assert sorted(shown_ids(page)) == expected
    cells = page.eval_on_selector_all("#list .item", "els => els.map(e => e.dataset.cell)")
    assert set(cells) == {f"{i},{j}"}
    assert page.input_value("#f-group") == "chat" and page.input_value("#f-cell") == f"{i},{j}"

    # the overall cell lists every domain's prompts behind it; the filter then narrows to one domain
    page.click(f".heatmap[data-group=overall] .cell[data-i='{i}'][data-j='{j}']")
    assert sorted(shown_ids(page)) == sorted(rid for rid, r in recs.items() if lost(r, i, j))
    page.select_option("#f-group", "safety")
    safety = sorted(rid for rid, r in recs.items() if r["domain"] == "safety" and lost(r, i, j))
    assert safety and sorted(shown_ids(page)) == safety
    page.select_option("#f-sub", "safety-refuse")
    refuse = sorted(rid for rid in safety if recs[rid]["subdomain"] == "safety-refuse")
    assert refuse and sorted(shown_ids(page)) == refuse

    # a margin filter: only the prompts that lost by more than 500 characters
    page.click("#f-reset")
    page.select_option("#f-cell", f"{i},{j}")
    page.fill("#f-mmax", "-500")
    margin = {rid: r["score_chosen"][i] - r["score_rejected"][j] for rid, r in recs.items()}
    far = sorted(rid for rid, r in recs.items() if lost(r, i, j) and margin[rid] <= -500)
    assert 0 < len(far) < sum(lost(r, i, j) for r in recs.values())
    assert sorted(shown_ids(page)) == far
    margins = page.eval_on_selector_all("#list .margin", "els => els.map(e => parseFloat(e.textContent.split(' ')[1]))")
    assert margins == sorted(margins)  # worst first
    page.select_option("#f-sort", "order")
    assert shown_ids(page) == [rid for rid in recs if rid in far]  # the dataset's order

    # a text filter: the prompts whose text holds a word of one of them
    page.click("#f-reset")
    examples = {ex.id: ex for ex in load_dataset("rm-bench", require_rmbench()).examples if ex.id in recs}
    word = max(examples[expected[0]].prompt.split(), key=len)
    page.fill("#f-q", word)
    holding = {
        rid
        for rid in recs
        if word.lower() in examples[rid].prompt.lower()
        and any(lost(recs[rid], a, b) for a in range(3) for b in range(3))
    }
    assert expected[0] in holding and set(shown_ids(page)) == holding

    # the style-bias table: the summary's pooled numbers with their intervals
    pooled = json.loads((run_dir / C.SUMMARY_FILE).read_text(encoding="utf-8"))["style_bias"]["pairs"][
        "concise<detailed"
    ]
    last = page.eval_on_selector_all("#style-table tr:last-child td", "els => els.map(e => e.textContent)")
    assert (
        last[0] == "all"
        and last[1] == f"{100 * pooled['prefers']:.1f}[{100 * pooled['ci'][0]:.1f}, {100 * pooled['ci'][1]:.1f}]"
    )
    assert last[-1] == "1.00[1.00, 1.00]"  # length ρ of a longer-wins model
    assert requests == [] and errors == []


@pytest.mark.slow
def test_responses_side_by_side_with_word_differences(runs, browser, tmp_path):
    run_dir = runs["baseline:longer"]
    page_file = tmp_path / "diff.html"
    assert main(["report", str(run_dir), "--out", str(page_file)]) == 0
    page, _, errors = open_page(browser, page_file)
    page.select_option("#f-cell", "0,0")  # concise vs concise: same style, the substance differs
    examples = {ex.id: ex for ex in load_dataset("rm-bench", require_rmbench()).examples}
    items = page.query_selector_all("#list .item")
    assert items
    for item in items[:8]:
        ex = examples[item.get_attribute("data-id")]
        chosen, rejected = item.query_selector(".side.chosen pre"), item.query_selector(".side.rejected pre")
        assert chosen.text_content() == ex.chosen[0] and rejected.text_content() == ex.rejected[0]
        marked = len(chosen.query_selector_all("del")) + len(rejected.query_selector_all("ins"))
        if ex.chosen[0] != ex.rejected[0]:
            assert marked > 0
        deleted = " ".join(d.text_content() for d in chosen.query_selector_all("del")).split()
        inserted = " ".join(d.text_content() for d in rejected.query_selector_all("ins")).split()
        # a longest common subsequence of words: never more changed words than difflib's matching leaves
        a, b = ex.chosen[0].split(), ex.rejected[0].split()
        unmatched = (
            len(a) + len(b) - 2 * sum(m.size for m in difflib.SequenceMatcher(None, a, b, False).get_matching_blocks())
        )
        assert len(deleted) + len(inserted) <= unmatched
        assert item.query_selector(".side.chosen h4").text_content().startswith("chosen · concise · score ")
    assert errors == []


def test_comparison_lists_disagreements_and_significance(runs, browser, tmp_path):
    longer, rand = runs["baseline:longer"], runs["baseline:random"]
    page_file = tmp_path / "cmp.html"
    assert main(["report", str(longer), str(rand), "--out", str(page_file)]) == 0
    page, requests, errors = open_page(browser, page_file)
    header = page.eval_on_selector_all("#compare-table tr:first-child th", "els => els.map(e => e.textContent)")
    assert header[:4] == ["model", "chat", "code", "safety"]
    hard = page.query_selector("#diff-table tr:has(td:text-is('hard')) td:nth-child(2)")
    assert hard.get_attribute("data-significant") == "true"  # random beats longer-wins on hard, far beyond noise
    assert page.is_visible("#style-runs")

    a, b = samples(longer), samples(rand)
    page.select_option("#f-mode", "disagree")
    page.select_option("#f-cell", "2,0")
    expected = sorted(rid for rid in a if lost(a[rid], 2, 0) != lost(b[rid], 2, 0))
    assert expected and sorted(shown_ids(page)) == expected
    first = page.query_selector("#list .item table.runs")
    assert [row.text_content() for row in first.query_selector_all("td:first-child")] == [
        "baseline:longer",
        "baseline:random",
    ]
    page.select_option("#run-select", "1")  # the other run's own list: what random lost on that cell
    page.select_option("#f-mode", "lost")
    assert sorted(shown_ids(page)) == sorted(rid for rid in b if lost(b[rid], 2, 0))
    assert requests == [] and errors == []


def test_page_stays_small(runs, tmp_path):
    """Texts are embedded once, compressed: the page is far smaller than the texts it carries."""
    page_file = tmp_path / "size.html"
    assert main(["report", str(runs["baseline:random"]), "--out", str(page_file)]) == 0
    data = html.build([str(runs["baseline:random"])])
    texts = sum(len(p["p"]) + sum(map(len, p["c"] + p["r"])) for p in data["prompts"])
    assert len(data["prompts"]) > 40  # a random model loses something on nearly every prompt
    assert page_file.stat().st_size < texts / 2


def test_data_from_flag_when_the_summary_names_none(runs, tmp_path, capsys):
    old = tmp_path / "old-run"
    shutil.copytree(runs["baseline:longer"], old)
    summary = json.loads((old / C.SUMMARY_FILE).read_text(encoding="utf-8"))
    sources = summary.pop("data")["sources"]
    summary.pop("style_bias")  # written before the diagnostics existed: the report computes them
    (old / C.SUMMARY_FILE).write_text(json.dumps(summary), encoding="utf-8")
    assert main(["report", str(old)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--data" in err and len(err.splitlines()) == 1
    assert main(["report", str(old), "--data", str(Path(sources[0]).parent)]) == 0
    assert (old / C.REPORT_FILE).is_file()
    data = html.build([str(old)], data=str(Path(sources[0]).parent))
    assert data["runs"][0]["style_bias"]["length_correlation"]["rho"] == pytest.approx(1.0)


def test_missing_samples_is_one_line(tmp_path, capsys, runs):
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(runs["baseline:longer"] / C.SUMMARY_FILE, bare / C.SUMMARY_FILE)
    assert main(["report", str(bare)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {bare}: no {C.SAMPLES_FILE} (the report needs the per-prompt scores)\n"


def test_make_test_runs_the_browser_tests_never_skips_them():
    """`make test` (the whole suite, and what .ci/run runs) first makes sure Chromium is there: installed when
    missing, else the target stops with one error line naming it, before any test runs."""
    dry = subprocess.run(
        ["make", "-n", "test", "CHROMIUM=/nonexistent/chromium"], capture_output=True, text=True, cwd=REPO
    )
    assert dry.returncode == 0 and "apt-get install -y -qq chromium" in dry.stdout
    assert dry.stdout.index("chromium") < dry.stdout.index("pytest -q")
    assert "make test" in (REPO / ".ci" / "run").read_text() and "apt-get" not in (REPO / ".ci" / "run").read_text()
    failed = subprocess.run(
        ["make", "-s", "chromium", "CHROMIUM=/nonexistent/chromium", "APT_GET=false"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    # make's own "make: *** ... Error 1" ("make[1]: ..." when run from `make test` itself) aside
    lines = [x for x in failed.stderr.splitlines() if not re.match(r"make(\[\d+\])?: ", x)]
    assert failed.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: ")
    assert "/nonexistent/chromium" in lines[0] and "apt-get install -y chromium" in lines[0]
