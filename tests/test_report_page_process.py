"""`rmbench-client report` of the process benchmarks in headless Chromium: the solutions a run misjudged, exactly
the steps it judged against their labels marked (PRMBench: above the threshold; ProcessBench: not below it), the
data notes, and two runs compared (their disagreements, the significance table)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers_cli import cli
from helpers_data import rmbench_dir
from helpers_report import chromium, open_page
from processbench_fixture import write_processbench

from rmbench_client import constants as C


def prmbench_files(tmp_path: Path) -> Path:
    """The real multi-solution file (its repeated ids) and one error class's file, linked into one folder."""
    shared = rmbench_dir().parent / "prmbench"
    names = ("prm_test_p12_multi_solutions.jsonl", "prm800k_test_p1_4o_circular.jsonl")
    if not all((shared / n).is_file() for n in names):
        pytest.skip(f"shared PRMBench data not found in {shared}")
    d = tmp_path / "prmbench"
    d.mkdir()
    for n in names:
        (d / n).symlink_to(shared / n)
    return d


def baseline(data: Path, benchmark: str, out: Path, seed: int = 0, *extra: str) -> Path:
    proc = cli("run", "--benchmark", benchmark, "--data", str(data), "--model", "baseline:random", "--seed",
               str(seed), "--out", str(out), "--no-progress", "--json", *extra)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out


def misjudged(line: dict, above: bool, threshold: float) -> list[int]:
    if "step_labels" in line:  # PRMBench
        labels = line["step_labels"]
    else:  # ProcessBench: labelled up to the earliest wrong step
        labels = [1] * line["num_steps"] if line["label"] == -1 else [1] * line["label"] + [0]
    passes = [(v > threshold) if above else (v >= threshold) for v in line["step_scores"]]
    return [i for i, (p, label) in enumerate(zip(passes, labels, strict=False)) if p != (label == 1)]


@pytest.fixture(scope="module")
def browser() -> Iterator:
    with chromium() as b:
        yield b


def all_solutions(page) -> list[str]:
    while page.is_visible("#s-more"):
        page.click("#s-more")
    return page.eval_on_selector_all("#s-list .solution", "els => els.map(e => e.dataset.id)")


@pytest.mark.slow
def test_prmbench_page_marks_the_misjudged_steps(browser, tmp_path):
    out = baseline(prmbench_files(tmp_path), "prmbench", tmp_path / "run", 0, "--threshold", "0.3")
    report = tmp_path / "page.html"
    assert cli("report", str(out), "--out", str(report)).returncode == 0
    lines = [json.loads(x) for x in (out / C.SAMPLES_FILE).read_text().splitlines()]
    expected = {x["id"]: misjudged(x, True, 0.3) for x in lines}
    page, requests, errors = open_page(browser, report)
    assert errors == [] and requests == []
    assert page.is_hidden("#list-section") and page.is_visible("#steps-section")
    listed = all_solutions(page)
    assert listed == [x["id"] for x in lines if expected[x["id"]]]  # dataset order, only the misjudged ones
    for rid in listed[:5]:
        marked = page.eval_on_selector_all(
            f'.solution[data-id="{rid}"] .step.wrong', "els => els.map(e => +e.dataset.step)"
        )
        assert marked == expected[rid]
    notes = page.inner_text("#notes")
    assert "5 later record(s) with a repeated id left out" in notes and "multi_solutions_prm_test_p2_863" in notes
    assert "0.3" in page.inner_text("#s-help")
    page.select_option("#s-group", "multi_solutions")
    shown = page.eval_on_selector_all("#s-list .solution", "els => els.map(e => e.dataset.id)")
    assert shown and all(rid.startswith("multi_solutions_") for rid in shown)
    assert "PRMScore" in page.inner_text("#summary-table")


@pytest.mark.slow
def test_processbench_page_and_two_runs(browser, tmp_path):
    data = write_processbench(tmp_path / "pb", count=9)
    runs = [baseline(data, "processbench", tmp_path / f"run{seed}", seed) for seed in (0, 1)]
    report = tmp_path / "page.html"
    proc = cli("report", *map(str, runs), "--out", str(report))
    assert proc.returncode == 0, proc.stderr
    page, requests, errors = open_page(browser, report)
    assert errors == [] and requests == []
    assert page.is_visible("#comparison-section") and "average_f1" in page.inner_text("#diff-table")
    lines = [[json.loads(x) for x in (r / C.SAMPLES_FILE).read_text().splitlines()] for r in runs]
    first = {x["id"]: misjudged(x, False, 0.5) for x in lines[0]}
    second = {x["id"]: misjudged(x, False, 0.5) for x in lines[1]}
    assert all_solutions(page) == [x["id"] for x in lines[0] if first[x["id"]]]
    rid = next(i for i, steps in first.items() if steps)
    marked = page.eval_on_selector_all(
        f'.solution[data-id="{rid}"] .step.wrong', "els => els.map(e => +e.dataset.step)"
    )
    assert marked == first[rid]
    # steps after the earliest wrong one carry no label and are never judged
    labels = {x["id"]: x["label"] for x in lines[0]}
    unjudged = page.eval_on_selector_all(
        f'.solution[data-id="{rid}"] .step.unjudged', "els => els.map(e => +e.dataset.step)"
    )
    assert all(i > labels[rid] for i in unjudged) if labels[rid] != -1 else unjudged == []
    page.select_option("#s-mode", "disagree")
    assert all_solutions(page) == [x["id"] for x in lines[0] if first[x["id"]] != second[x["id"]]]
    page.select_option("#run-select", "1")
    page.select_option("#s-mode", "wrong")
    assert all_solutions(page) == [x["id"] for x in lines[1] if second[x["id"]]]
