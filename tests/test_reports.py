"""Reports: heatmap PNGs and `compare` over run directories (the benchmarks' own result files: test_score_formats)."""

from __future__ import annotations

import argparse
import io
import json
import random
from pathlib import Path

import pytest
from helpers_scoring import score
from rich.console import Console

from rmbench_client import constants as C
from rmbench_client.benchmarks import registry
from rmbench_client.benchmarks.rm_bench.heatmap import write_heatmaps
from rmbench_client.cli.compare import add_compare_parser, cmd_compare
from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores
from rmbench_client.report.compare import bar_chart, render
from rmbench_client.results.comparison import load_runs

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RMBENCH = registry.get("rm-bench")


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG header, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def rm(rid: str, chosen, rejected, domain: str) -> PromptScores:
    return PromptScores(rid, domain, tuple(map(float, chosen)), tuple(map(float, rejected)))


def rmbench_scores(seed: int, domains=("chat", "code", "safety"), n: int = 12) -> list[PromptScores]:
    rng = random.Random(seed)
    return [
        rm(f"{d}/{i}", [rng.gauss(1, 1) + k for k in range(3)], [rng.gauss(0, 1) + k for k in range(3)], d)
        for d in domains
        for i in range(n)
    ]


def rewardbench_scores(seed: int) -> list[PromptScores]:
    rng = random.Random(seed)
    subsets = ("alpacaeval-easy", "mt-bench-hard", "refusals-dangerous", "math-prm", "hep-python")
    out = []
    for k, subset in enumerate(subsets):
        for i in range(10):
            c, r = rng.gauss(0.5, 1), rng.gauss(0, 1)
            out.append(PromptScores(str(100 * k + i), subset, (c,), (r if i % 7 else c,)))  # a few ties
    return out


def run_dir(root: Path, name: str, model: str, summary: dict) -> Path:
    d = root / name
    d.mkdir()
    (d / C.SUMMARY_FILE).write_text(json.dumps({**summary, "model": model}), encoding="utf-8")
    return d


# --- heatmaps -----------------------------------------------------------------------------------------------------


def test_heatmaps_one_png_per_domain_and_overall(tmp_path):
    summary = RMBENCH.score(rmbench_scores(0))
    paths = write_heatmaps(summary, tmp_path / "run", "org/model")
    assert [p.name for p in paths] == [
        "heatmap-chat.png",
        "heatmap-code.png",
        "heatmap-safety.png",
        "heatmap-overall.png",
    ]
    for p in paths:
        width, height = png_size(p)
        assert 500 <= width <= 2000 and 500 <= height <= 2000


def test_heatmap_pixels_load(tmp_path):
    import matplotlib.image

    (path, *_) = write_heatmaps(RMBENCH.score(rmbench_scores(1, domains=("math",))), tmp_path, "m")
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 400 and pixels.shape[1] > 400
    assert pixels.std() > 0.05  # not a blank canvas


def test_no_heatmaps_without_domains(tmp_path):
    for summary in (RMBENCH.score([]), RMBENCH.read_summary({"benchmark": "rm-bench"})):  # a run that scored nothing
        assert write_heatmaps(summary, tmp_path, "m") == []
    assert list(tmp_path.iterdir()) == []


# --- compare ------------------------------------------------------------------------------------------------------


def compare_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_compare_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["compare", *argv])


@pytest.fixture
def two_rmbench_runs(tmp_path):
    a = score("rm-bench", rmbench_scores(2))
    b = score("rm-bench", rmbench_scores(3, domains=("chat", "code", "safety", "math")))
    return (
        run_dir(tmp_path, "run-a", "org/alpha-rm", a),
        run_dir(tmp_path, "run-b", "beta-rm", b),
        a,
        b,
    )


def test_compare_table_markdown_csv(tmp_path, two_rmbench_runs, capsys):
    dir_a, dir_b, a, b = two_rmbench_runs
    buf = io.StringIO()
    chart = tmp_path / "charts" / "cmp.png"
    argv = [str(dir_a), str(dir_b / C.SUMMARY_FILE)]
    assert cmd_compare(compare_args(*argv, "--chart", str(chart)), Console(file=buf, width=200)) == 0
    table = buf.getvalue()
    for model, s in (("org/alpha-rm", a), ("beta-rm", b)):
        assert model in table
        assert f"{100 * s['overall']['avg']:.1f}" in table
        assert f"{100 * s['domains']['chat']['avg']:.1f}" in table
    assert png_size(chart)[0] > 400
    assert "different domains" in capsys.readouterr().err  # run b has math, run a has not

    assert cmd_compare(compare_args(*argv, "--format", "markdown"), Console(file=io.StringIO())) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0] == "| model | chat | math | code | safety | easy | normal | hard | avg | n | failed | complete |"
    row_a = next(line for line in md if line.startswith("| org/alpha-rm |"))
    assert "| – |" in row_a  # no math in run a
    assert f"| {100 * a['overall']['avg']:.1f} |" in row_a

    assert cmd_compare(compare_args(*argv, "--format", "csv"), Console(file=io.StringIO())) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "model,chat,math,code,safety,easy,normal,hard,avg,n,failed,complete"
    cells = dict(zip(lines[0].split(","), lines[2].split(","), strict=True))
    assert cells["model"] == "beta-rm"
    assert cells["math"] == f"{100 * b['domains']['math']['avg']:.2f}"
    assert cells["hard"] == f"{100 * b['overall']['hard']:.2f}"


def test_compare_rewardbench_sections_and_chart(tmp_path):
    a = score("reward-bench", rewardbench_scores(4))
    b = score("reward-bench", rewardbench_scores(5))
    runs = load_runs([str(run_dir(tmp_path, "a", "rm-a", a)), str(run_dir(tmp_path, "b", "rm-b", b))])
    csv_text = render(runs, "csv")
    assert isinstance(csv_text, str)
    header, row_a, row_b = csv_text.splitlines()
    assert header == "model,Chat,Chat Hard,Safety,Reasoning,score,n,failed,complete"
    assert row_a.startswith(
        ",".join(
            ["rm-a", *(f"{100 * a['sections'][s]:.2f}" for s in ("Chat", "Chat Hard", "Safety", "Reasoning"))]
            + [f"{100 * a['score']:.2f}"]
        )
    )
    assert row_b.startswith("rm-b,")
    assert png_size(bar_chart(runs, tmp_path / "rb.png"))[0] > 400


def test_compare_shows_n_failures_and_a_partial_run(tmp_path, capsys):
    full = score("reward-bench", rewardbench_scores(4)) | {"complete": True, "partial": [], "scored": 50, "failed": 0}
    reasons = ["--limit 20: 20 of 50 prompts", "2 prompt(s) could not be scored"]
    part = score("reward-bench", rewardbench_scores(4)[:20]) | {"complete": False, "partial": reasons}
    part |= {"scored": 18, "failed": 2}
    argv = [str(run_dir(tmp_path, "a", "full-run", full)), str(run_dir(tmp_path, "b", "limited-run", part))]
    assert cmd_compare(compare_args(*argv, "--format", "csv"), Console(file=io.StringIO())) == 0
    out, err = capsys.readouterr()
    rows = {line.split(",")[0]: line.split(",")[-3:] for line in out.splitlines()[1:]}
    assert rows == {"full-run": ["50", "0", "yes"], "limited-run": ["18", "2", "partial"]}
    assert "limited-run is partial: --limit 20: 20 of 50 prompts" in err
    buf = io.StringIO()
    assert cmd_compare(compare_args(*argv), Console(file=buf, width=200)) == 0
    assert "partial" in buf.getvalue()


def test_compare_names_fall_back_to_the_directory_and_stay_unique(tmp_path):
    s = score("rm-bench", rmbench_scores(6))
    d1 = tmp_path / "first"
    d1.mkdir()
    (d1 / C.SUMMARY_FILE).write_text(json.dumps(s), encoding="utf-8")  # no "model"
    d2 = run_dir(tmp_path, "second", "first", s)
    names = [run.name for run in load_runs([str(d1), str(d2)])]
    assert names[0] == "first" and names[1].startswith("first (") and len(set(names)) == 2


def test_compare_rejects_mixed_benchmarks_and_bad_paths(tmp_path):
    a = run_dir(tmp_path, "a", "x", score("rm-bench", rmbench_scores(7)))
    b = run_dir(tmp_path, "b", "y", score("reward-bench", rewardbench_scores(7)))
    with pytest.raises(DataError, match="different benchmarks"):
        load_runs([str(a), str(b)])
    missing = tmp_path / "nope"
    with pytest.raises(DataError, match=str(missing)):
        load_runs([str(missing)])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="bad.json"):
        load_runs([str(bad)])
    empty = run_dir(tmp_path, "empty", "z", {"benchmark": "rm-bench"})
    with pytest.raises(DataError, match="scored no prompt"):
        load_runs([str(empty)])


def test_a_partial_summary_is_printed_as_partial():
    from rmbench_client.report.printing import print_summary

    summary = score("rm-bench", rmbench_scores(7)) | {"complete": False, "partial": ["no data for domain(s) math"]}
    buf = io.StringIO()
    print_summary(summary, "m on rm-bench", Console(file=buf, width=150))
    out = buf.getvalue()
    assert "m on rm-bench — partial" in out and "partial: no data for domain(s) math" in out
    buf = io.StringIO()
    print_summary(summary | {"complete": True, "partial": []}, "m on rm-bench", Console(file=buf, width=150))
    assert "partial" not in buf.getvalue()
