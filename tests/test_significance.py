"""Significance in `compare`: paired bootstrap intervals and permutation p-values of every headline number, on
constructed runs with a known large difference, identical runs, and runs that scored different prompts."""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
from pathlib import Path

import numpy as np
import pytest
from helpers_scoring import score
from rich.console import Console
from scipy.stats import binomtest

from rmbench_client import constants as C
from rmbench_client.benchmarks import registry as benchmarks
from rmbench_client.benchmarks.shared.significance import compare
from rmbench_client.cli.compare import add_compare_parser, cmd_compare
from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores
from rmbench_client.report.compare import chart_bars
from rmbench_client.results import comparison
from rmbench_client.results.score_files import read_scores

RM = benchmarks.get("rm-bench")
RB = benchmarks.get("reward-bench")
DOMAINS = ("chat", "code", "safety")


def rm_run(seed: int, shift: float, n: int = 40, domains=DOMAINS) -> list[PromptScores]:
    """RM-Bench scores: the chosen responses score `shift` above the rejected ones on average."""
    rng = random.Random(seed)
    return [
        PromptScores(
            f"{d}/{i}",
            d,
            tuple(rng.gauss(shift, 1) for _ in range(3)),
            tuple(rng.gauss(0, 1) for _ in range(3)),
        )
        for d in domains
        for i in range(n)
    ]


def rb_run(correct: list[bool], subsets: list[str]) -> list[PromptScores]:
    return [
        PromptScores(str(i), s, (1.0 if ok else 0.0,), (0.5,))
        for i, (ok, s) in enumerate(zip(correct, subsets, strict=True))
    ]


def test_large_difference_is_significant_everywhere():
    weak, strong = rm_run(1, 0.0), rm_run(2, 2.5)
    result = compare([weak, strong], RM.prompt_values, RM.headline_numbers, samples=500, permutations=2000)
    assert result["shared"] == 120 and result["left_out"] == [0, 0]
    (diffs,) = result["differences"]
    a, b = score("rm-bench", weak), score("rm-bench", strong)
    expected = {d: b["domains"][d]["avg"] - a["domains"][d]["avg"] for d in DOMAINS}
    expected |= {k: b["overall"][k] - a["overall"][k] for k in ("easy", "normal", "hard", "avg")}
    assert list(diffs) == [*DOMAINS, "easy", "normal", "hard", "avg"]  # compare's columns, in order
    for name, want in expected.items():
        d = diffs[name]
        assert d["diff"] == pytest.approx(want, abs=1e-12)  # the benchmark's own aggregation
        assert d["diff"] > 0.2 and d["significant"] and d["p"] == pytest.approx(1 / 2001)
        assert 0 < d["ci"][0] <= d["diff"] <= d["ci"][1]


def test_identical_runs_are_not_significant():
    run = rm_run(3, 0.7)
    result = compare([run, list(reversed(run))], RM.prompt_values, RM.headline_numbers, samples=200, permutations=500)
    for d in result["differences"][0].values():
        assert d == {"diff": 0.0, "ci": [0.0, 0.0], "p": 1.0, "significant": False}


def test_prompts_only_some_runs_scored_are_left_out_and_counted():
    a = rm_run(4, 1.0)
    b = [r for r in rm_run(5, 1.0) if not r.id.endswith("/3")] + [
        PromptScores("math/1", "math", (1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    ]
    result = compare([a, b], RM.prompt_values, RM.headline_numbers, samples=100, permutations=100)
    assert result["shared"] == 117
    assert result["left_out"] == [3, 1]
    shared = {r.id for r in b} & {r.id for r in a}
    expected = score("rm-bench", [r for r in b if r.id in shared])["overall"]["avg"]
    expected -= score("rm-bench", [r for r in a if r.id in shared])["overall"]["avg"]
    assert result["differences"][0]["avg"]["diff"] == pytest.approx(expected, abs=1e-12)
    assert "math" not in result["differences"][0]  # only run b has it


def test_pairwise_accuracy_p_value_agrees_with_exact_mcnemar():
    rng = random.Random(7)
    subsets = ["alpacaeval-easy"] * 300
    a = [rng.random() < 0.70 for _ in subsets]
    b = [ok if rng.random() < 0.8 else not ok for ok in a]  # disagree on about a fifth of the prompts
    b = [ok or rng.random() < 0.15 for ok in b]  # and b a little better
    result = compare([rb_run(a, subsets), rb_run(b, subsets)], RB.prompt_values, RB.headline_numbers, permutations=5000)
    d = result["differences"][0]["alpacaeval-easy"]
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    assert d["diff"] == pytest.approx((only_b - only_a) / 300)
    exact = binomtest(only_b, only_a + only_b, 0.5).pvalue
    assert d["p"] == pytest.approx(exact, abs=0.02), (only_a, only_b, exact)


def test_rewardbench_sections_and_score_use_the_official_weights():
    rng = random.Random(9)
    subsets = ["alpacaeval-easy"] * 50 + ["mt-bench-easy"] * 50 + ["math-prm"] * 50 + ["hep-go"] * 50
    a = [rng.random() < 0.5 for _ in subsets]
    b = [rng.random() < 0.9 for _ in subsets]
    result = compare([rb_run(a, subsets), rb_run(b, subsets)], RB.prompt_values, RB.headline_numbers, samples=200)
    diffs = result["differences"][0]
    sa, sb = score("reward-bench", rb_run(a, subsets)), score("reward-bench", rb_run(b, subsets))
    for name in ("Chat", "Reasoning"):
        assert diffs[name]["diff"] == pytest.approx(sb["sections"][name] - sa["sections"][name])
    assert diffs["score"]["diff"] == pytest.approx(sb["score"] - sa["score"])
    assert diffs["hep-go"]["diff"] == pytest.approx(sb["subsets"]["hep-go"] - sa["subsets"]["hep-go"])
    assert diffs["score"]["significant"]


def test_a_prompt_in_two_groups_is_an_error():
    a = rm_run(1, 0.0, n=3)
    b = [PromptScores(r.id, "code" if r.group == "chat" else r.group, r.chosen, r.rejected) for r in a]
    with pytest.raises(DataError, match="group"):
        compare([a, b], RM.prompt_values, RM.headline_numbers)
    with pytest.raises(DataError, match="share no"):
        compare([a, rm_run(1, 0.0, domains=("math",))], RM.prompt_values, RM.headline_numbers)


# --- the compare command ------------------------------------------------------------------------------------------


def write_run(root: Path, name: str, model: str, records: list[PromptScores]) -> Path:
    d = root / name
    d.mkdir()
    (d / C.SUMMARY_FILE).write_text(json.dumps(score("rm-bench", records) | {"model": model}), encoding="utf-8")
    (d / C.SAMPLES_FILE).write_text("".join(json.dumps(_line(r)) + "\n" for r in records), encoding="utf-8")
    return d


def _line(r: PromptScores) -> dict:
    return {"id": r.id, "domain": r.group, "score_chosen": list(r.chosen), "score_rejected": list(r.rejected)}


def compare_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_compare_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["compare", *argv])


@pytest.fixture
def three_runs(tmp_path):
    weak = write_run(tmp_path, "weak", "weak-rm", rm_run(1, 0.0))
    strong = write_run(tmp_path, "strong", "strong-rm", rm_run(2, 2.5))
    same = write_run(tmp_path, "same", "weak-again", rm_run(1, 0.0))
    return [str(weak), str(strong), str(same)]


def test_compare_table_marks_significant_differences(three_runs, capsys):
    buf = io.StringIO()
    assert cmd_compare(compare_args(*three_runs), Console(file=buf, width=250)) == 0
    text = buf.getvalue()
    assert "differences against weak-rm" in text
    lines = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") == 4}
    assert "p<0.001 *" in lines["avg"]  # strong-rm: significant
    assert lines["avg"].split("│")[3].strip() == "+0.0 [+0.0, +0.0] p=1"  # weak-again: identical, not marked


def test_compare_markdown_csv_and_chart_carry_the_differences(three_runs, tmp_path, capsys):
    assert cmd_compare(compare_args(*three_runs, "--format", "markdown"), Console(file=io.StringIO())) == 0
    md = capsys.readouterr().out
    assert "Differences against weak-rm" in md
    avg = next(line for line in md.splitlines() if line.startswith("| avg |"))
    assert avg.count("*") == 1 and "p=1 |" in avg

    chart = tmp_path / "chart.png"
    args = compare_args(*three_runs, "--format", "csv", "--chart", str(chart))
    assert cmd_compare(args, Console(file=io.StringIO())) == 0
    out = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out.out)))
    assert [r["model"] for r in rows] == ["weak-rm", "strong-rm", "weak-again"]
    assert rows[0]["avg diff"] == "" and rows[0]["shared prompts"] == "120"
    assert rows[1]["avg significant"] == "yes" and float(rows[1]["avg low"]) > 0
    assert rows[2]["avg significant"] == "no" and float(rows[2]["avg p"]) == 1.0
    want = 100 * (
        score("rm-bench", rm_run(2, 2.5))["overall"]["avg"] - score("rm-bench", rm_run(1, 0.0))["overall"]["avg"]
    )
    assert float(rows[1]["avg diff"]) == pytest.approx(want, abs=0.006)
    assert float(rows[1]["avg p"]) == pytest.approx(1 / (C.PERMUTATIONS + 1), rel=1e-3)  # none as extreme
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_without_samples_says_why(tmp_path, capsys):
    dirs = []
    for name, seed in (("a", 1), ("b", 2)):
        d = tmp_path / name
        d.mkdir()
        (d / C.SUMMARY_FILE).write_text(json.dumps(score("rm-bench", rm_run(seed, 1.0)) | {"model": name}))
        dirs.append(str(d))
    assert cmd_compare(compare_args(*dirs, "--format", "csv"), Console(file=io.StringIO())) == 0
    out = capsys.readouterr()
    assert "diff" not in out.out.splitlines()[0]
    assert f"no {C.SAMPLES_FILE} beside" in out.err and "not tested for significance" in out.err


def test_permutation_swaps_are_paired():
    """A constant offset on every prompt is as significant as it gets, however noisy the prompts are."""
    base = rm_run(11, 0.3)
    shifted = [PromptScores(r.id, r.group, tuple(c + 100 for c in r.chosen), r.rejected) for r in base]
    d = compare([base, shifted], RM.prompt_values, RM.headline_numbers, samples=100, permutations=1000)
    avg = d["differences"][0]["avg"]
    assert avg["significant"] and avg["diff"] == pytest.approx(1 - score("rm-bench", base)["overall"]["avg"])
    assert np.isclose(avg["p"], 1 / 1001)


def test_chart_bars_carry_intervals_and_significance_marks(three_runs):
    runs = comparison.load_runs(three_runs)
    scores, why_not = comparison.load_samples(runs)
    assert scores is not None and len(why_not) == 1 and "no data hashes" in why_not[0]  # hand-written summaries
    groups, bars = chart_bars(runs, comparison.differences(runs, scores))
    assert groups == ["easy", "normal", "hard", "avg"]
    weak, strong, same = bars
    for bar, run in zip(bars, runs, strict=True):
        ci = run.summary.raw["overall"]["ci"]
        assert bar.intervals == [pytest.approx((100 * ci[g][0], 100 * ci[g][1])) for g in groups]
    assert all(label.endswith("*") for label in strong.labels)
    assert not any("*" in label for label in weak.labels + same.labels)
    assert strong.labels[3] == f"{100 * runs[1].summary.raw['overall']['avg']:.1f}*"


def test_pairwise_accuracy_is_prompt_weighted_and_macro_is_not():
    rng = random.Random(12)
    subsets = ["mine-a"] * 150 + ["mine-b"] * 30
    a = [rng.random() < 0.6 for _ in subsets]
    b = [rng.random() < 0.8 for _ in subsets]
    pw = benchmarks.get("pairwise")
    result = compare([rb_run(a, subsets), rb_run(b, subsets)], pw.prompt_values, pw.headline_numbers, samples=200)
    diffs = result["differences"][0]
    sa, sb = score("pairwise", rb_run(a, subsets)), score("pairwise", rb_run(b, subsets))
    assert list(diffs) == ["mine-a", "mine-b", "accuracy", "macro"]  # compare's columns
    assert diffs["accuracy"]["diff"] == pytest.approx(sb["accuracy"] - sa["accuracy"])
    assert diffs["macro"]["diff"] == pytest.approx(sb["macro_accuracy"] - sa["macro_accuracy"])
    assert diffs["accuracy"]["diff"] != pytest.approx(diffs["macro"]["diff"])


def test_rewardbench2_comparison_says_why_it_is_not_tested(tmp_path, capsys):
    dirs = []
    for name, shift in (("a", 0.0), ("b", 1.0)):
        rng = random.Random(name)
        d = tmp_path / name
        d.mkdir()
        lines = [
            {
                "id": str(i),
                "subset": "Factuality",
                "scores": [rng.gauss(shift, 1), *(rng.gauss(0, 1) for _ in range(3))],
                "num_correct": 1,
            }
            for i in range(20)
        ]
        (d / C.SAMPLES_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        summary = score("reward-bench-2", read_scores([d / C.SAMPLES_FILE])[1]) | {"model": name}
        (d / C.SUMMARY_FILE).write_text(json.dumps(summary), encoding="utf-8")
        dirs.append(str(d))
    assert cmd_compare(compare_args(*dirs, "--format", "csv"), Console(file=io.StringIO())) == 0
    out = capsys.readouterr()
    assert "diff" not in out.out and "reward-bench-2: its headline numbers are not means over prompts" in out.err
