"""The leaderboard page and the report page's stamp in headless Chromium (Debian's, driven by Playwright), opened
from their files with every network request refused: the table sorts by any column with empty cells last and ties
sharing a rank, a number links to its run's report page, each cell names its run; the report page says what made
its run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers_cli import cli
from helpers_report import chromium, open_page
from test_leaderboard import runs  # noqa: F401 - the runs of the leaderboard's tests

import rmbench_client as rmb

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser(runs: Path) -> Iterator:  # noqa: F811 - the imported fixture
    with chromium() as b:
        yield b


def _models(page) -> list[str]:
    return page.eval_on_selector_all("#board tbody tr", "rows => rows.map(r => r.dataset.model)")


def _column(page, col: int) -> list[str]:
    return page.eval_on_selector_all(f"#board tbody tr td:nth-child({col})", "cells => cells.map(c => c.innerText)")


def test_the_table_sorts_by_any_column_with_empty_cells_last(runs: Path, browser, tmp_path: Path):  # noqa: F811
    out = tmp_path / "site" / "board.html"
    proc = cli("leaderboard", str(runs), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    page, requests, errors = open_page(browser, out)
    heads = page.eval_on_selector_all("#board thead th", "ths => ths.map(t => t.innerText.split('\\n')[0])")
    assert heads == ["#", "model ▲", "RM-Bench", "JudgeBench", "your own preference data"]
    assert _models(page) == ["Alpha", "baseline:longer", "baseline:markdown", "baseline:random"]
    empty = page.eval_on_selector_all("#board td.empty", "cells => cells.map(c => c.innerText)")
    assert len(empty) == 4 + 2 + 1 and set(empty) == {""}  # never a 0: markdown's partial run is no number
    page.click("#board th[data-col='2']")  # pairwise: the best first, the empty cell last
    assert _models(page) == ["Alpha", "baseline:longer", "baseline:random", "baseline:markdown"]
    assert _column(page, 1) == ["1=", "1=", "3", ""]  # Alpha is a copy of longer's first run: equal numbers
    page.click("#board th[data-col='2']")  # again: the other way, the empty cell still last
    assert _models(page) == ["baseline:random", "Alpha", "baseline:longer", "baseline:markdown"]
    page.click("#board th[data-col='1']")  # JudgeBench: longer and random tie, in their names' order
    assert _models(page)[:2] == ["baseline:longer", "baseline:random"] and _column(page, 1)[:2] == ["1=", "1="]
    page.click("#board th[data-col='-1']")
    assert _models(page) == ["Alpha", "baseline:longer", "baseline:markdown", "baseline:random"]
    assert requests == [] and errors == []


def test_each_number_names_its_run_and_links_to_its_report(runs: Path, browser, tmp_path: Path):  # noqa: F811
    out = tmp_path / "site" / "board.html"
    assert cli("leaderboard", str(runs), "--out", str(out)).returncode == 0
    page, requests, errors = open_page(browser, out)
    row = "#board tr[data-model='baseline:random']"
    judged = page.eval_on_selector(f"{row} td:nth-child(4)", "c => [c.innerText, c.title, c.querySelector('a')?.href]")
    summary = json.loads((runs / "random" / "judgebench" / "summary.json").read_text())
    low, high = summary["ci"]["accuracy"]
    assert judged[0] == f"{100 * summary['accuracy']:.1f}[{100 * low:.1f}, {100 * high:.1f}]"
    assert f"run: {(runs / 'random' / 'judgebench').resolve()}" in judged[1] and rmb.__version__ in judged[1]
    assert judged[2] == (runs / "random" / "judgebench" / "report.html").resolve().as_uri()
    longer = page.eval_on_selector("#board tr[data-model='baseline:longer'] td:nth-child(5)", "c => c.title")
    assert "1 other run(s) of this model on this benchmark: the latest complete one is shown" in longer
    assert "longer-pairwise" in longer and page.query_selector("#board tr[data-model='baseline:longer'] a") is None
    shown = page.inner_text("#runs")
    assert (
        f"Alpha on your own preference data: {(runs / 'alpha' / 'pairwise').resolve()} (rmbench-client version "
        "not recorded"
        in shown
        and "by its file's time)" in shown
    )  # Alpha's run is from before stamps
    left = page.inner_text("#left")
    assert "pairwise-reproduction" in left and "reproduction" in left and "--limit 5" in left and "broken" in left
    assert f"Page made by rmbench-client {rmb.__version__}" in page.inner_text("#made")
    assert requests == [] and errors == []


def test_the_report_page_says_what_made_its_run(runs: Path, browser):  # noqa: F811
    page, requests, errors = open_page(browser, runs / "random" / "judgebench" / "report.html")
    stamp = json.loads((runs / "random" / "judgebench" / "summary.json").read_text())["stamp"]
    said = page.inner_text("#stamp")
    assert said.startswith(f"Made by rmbench-client {rmb.__version__} · Python {stamp['python']} · numpy ")
    assert stamp["written"] in said and "rmbench_client" not in said  # made in-process: no command, no call
    assert requests == [] and errors == []
