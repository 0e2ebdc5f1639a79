"""`rmbench-client leaderboard`: models as rows, benchmarks as columns, each cell the latest complete run's headline;
runs found at any depth; incomplete runs, reproductions and unreadable summaries left out with why, never shown as a
number; CSV and JSON. Baseline runs on small data (no server); the page in Chromium: test_leaderboard_page.py."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from helpers_cli import cli, one_error_line
from helpers_data import require_rmbench
from test_judgebench import RECORDS, hub_split

import rmbench_client as rmb
from rmbench_client.config.loading import load_config
from rmbench_client.report.leaderboard_page import board_data
from rmbench_client.results.leaderboard import leaderboard
from rmbench_client.run.runner import run


def _run(model: str, benchmark: str, data: Path, out: Path, **more) -> Path:
    run(load_config(None, {"model": model, "benchmark": benchmark, "data": str(data), "out": str(out), **more}),
        progress=False, heatmaps=False)  # fmt: skip
    return out


def _restamp(run_dir: Path, **changes) -> None:
    """The run's summary with its stamp changed (None: removed), as another client or moment wrote it."""
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text())
    for key, value in changes.items():
        if key == "model":
            summary["model"] = value
        elif value is None:
            del summary["stamp"]
        else:
            summary["stamp"][key] = value
    path.write_text(json.dumps(summary, indent=2))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/: longer and random on JudgeBench (equal: 66.7) and on pairs (longer twice, the later with seed 1), a
    copy of longer's pairs run named "Alpha" from before stamps, markdown only on RM-Bench (partial: one domain),
    a reproduction, and a summary no client wrote. Deeper folders than one: a suite's layout and one more."""
    root = tmp_path_factory.mktemp("board")
    hub_split(root / "jb", "gpt", RECORDS)
    (root / "pw").mkdir()
    pairs = [{"prompt": f"Question {i}?", "chosen": "A fuller, right answer." * (i % 3 + 1),
              "rejected": "Wrong." * (i % 2 + 1), "subset": ("math", "geo")[i % 2]} for i in range(12)]  # fmt: skip
    (root / "pw" / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    runs = root / "runs"
    for model in ("longer", "random"):
        _run(f"baseline:{model}", "judgebench", root / "jb", runs / model / "judgebench")
        _run(f"baseline:{model}", "pairwise", root / "pw", runs / model / "pairwise")
    _restamp(runs / "longer" / "pairwise", written="2020-01-01T00:00:00+00:00")
    _run("baseline:longer", "pairwise", root / "pw", runs / "deeper" / "again" / "longer-pairwise", seed=1)
    shutil.copytree(runs / "longer" / "pairwise", runs / "alpha" / "pairwise")
    _restamp(runs / "alpha" / "pairwise", model="Alpha", stamp=None)
    rm = root / "rm"
    rm.mkdir()
    shutil.copy(require_rmbench() / "chat_filtered.json", rm)
    _run("baseline:markdown", "rm-bench", rm, runs / "markdown" / "rm-bench", limit=5)
    shutil.copytree(runs / "random" / "pairwise", runs / "random" / "pairwise-reproduction")
    _restamp(runs / "random" / "pairwise-reproduction", reproduces=str(runs / "random" / "pairwise"))
    (runs / "broken").mkdir()
    (runs / "broken" / "summary.json").write_text("{not json")
    cli("report", str(runs / "random" / "judgebench"))  # a report page for one run: its cell links to it
    return runs


def test_the_latest_complete_run_of_each_model_and_benchmark_is_its_cell(runs: Path):
    board = leaderboard([runs])
    assert board.benchmarks == ("rm-bench", "judgebench", "pairwise")  # the registry's order
    assert board.models == ("Alpha", "baseline:longer", "baseline:markdown", "baseline:random")  # by name, any case
    longer = board.cells["baseline:longer", "pairwise"]
    assert longer.run_dir == (runs / "deeper" / "again" / "longer-pairwise").resolve()  # any depth; the latest
    assert longer.others == 1 and longer.dated_by == "stamp" and longer.version == rmb.__version__
    summary = json.loads((longer.run_dir / "summary.json").read_text())
    assert (longer.name, longer.value, [longer.low, longer.high]) == ("macro", summary["macro_accuracy"],
                                                                      summary["ci"]["macro_accuracy"])  # fmt: skip
    alpha = board.cells["Alpha", "pairwise"]
    assert alpha.dated_by == "file" and alpha.version is None and alpha.others == 0  # a run from before stamps
    assert ("baseline:longer", "rm-bench") not in board.cells and ("Alpha", "judgebench") not in board.cells
    assert not any(m == "baseline:markdown" for m, _ in board.cells)  # a partial run is never a number
    judged = board.cells["baseline:random", "judgebench"]
    assert (
        judged.report == judged.run_dir / "report.html" and board.cells["baseline:longer", "judgebench"].report is None
    )
    kinds = {(x.path.name, x.kind) for x in board.left_out}
    assert kinds == {("rm-bench", "incomplete"), ("pairwise-reproduction", "reproduction"), ("broken", "unreadable")}
    why = next(x.why for x in board.left_out if x.kind == "incomplete")
    assert "--limit 5" in why and "no data for domain(s)" in why


def test_runs_written_in_the_same_second_are_a_tie_the_cell_says(runs: Path, tmp_path: Path):
    first, second = tmp_path / "a" / "run", tmp_path / "b" / "run"
    shutil.copytree(runs / "random" / "pairwise", first)
    shutil.copytree(runs / "random" / "pairwise", second)
    cell = leaderboard([tmp_path]).cells["baseline:random", "pairwise"]
    assert cell.tie and cell.others == 1 and cell.run_dir == first.resolve()  # the first by path


def test_csv_has_the_model_first_and_an_empty_cell_where_there_is_no_complete_run(runs: Path):
    proc = cli("leaderboard", str(runs), "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows[0] == ["model", "rm-bench", "judgebench", "pairwise"]
    table = {r[0]: r[1:] for r in rows[1:]}
    assert list(table) == ["Alpha", "baseline:longer", "baseline:markdown", "baseline:random"]
    assert table["baseline:markdown"] == ["", "", ""] and table["Alpha"][:2] == ["", ""]
    assert table["baseline:longer"][1] == table["baseline:random"][1] == "66.67"
    left = [line for line in proc.stderr.splitlines() if line.startswith("left out: ")]
    assert len(left) == 3 and any("markdown" in line and "incomplete" in line for line in left)


def test_json_holds_what_the_page_shows_with_its_stamp(runs: Path, tmp_path: Path):
    out = tmp_path / "board.json"
    proc = cli("leaderboard", str(runs / "longer"), str(runs / "random" / "judgebench"), "--format", "json", "--out",
               str(out))  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    found = json.loads(out.read_text())
    assert [b["name"] for b in found["benchmarks"]] == ["judgebench", "pairwise"]
    assert [r["model"] for r in found["rows"]] == ["baseline:longer", "baseline:random"]
    assert found["rows"][1]["cells"]["judgebench"]["report"].endswith("random/judgebench/report.html")
    assert found["stamp"]["version"] == rmb.__version__ and found["stamp"]["command"].startswith(
        "rmbench-client leaderboard "
    )
    assert board_data(leaderboard([runs / "longer"]))["rows"][0]["cells"]["pairwise"]["others"] == 0


def test_mistakes_are_one_error_line(runs: Path, tmp_path: Path):
    one_error_line(cli("leaderboard", str(tmp_path / "nowhere")), 2, "nowhere", "no such run directory or folder")
    (tmp_path / "empty").mkdir()
    one_error_line(cli("leaderboard", str(tmp_path / "empty")), 2, "empty", "no run in it")
    proc = cli("leaderboard", str(runs), "--out", "/dev/null/x/board.html")
    one_error_line(proc, 2, "/dev/null/x")
