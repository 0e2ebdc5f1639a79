"""Paired only over the same texts: summary.json records content hashes per data file and per prompt; `compare`
pairs only prompts whose hashes agree, and `report` shows only the texts that were scored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from helpers_cli import cli

from rmbench_client import constants as C
from rmbench_client.examples import Example
from rmbench_client.results.data_hashes import prompt_hash


def pairs_file(path: Path, n: int, offset: int = 0, longer_chosen: bool = True) -> Path:
    """n pairs without ids (numbered by index, as own data often is)."""
    lines = []
    for i in range(n):
        long, short = f"answer {i + offset} with a good deal more words in it", f"no {i + offset}"
        chosen, rejected = (long, short) if longer_chosen else (short, long)
        lines.append(json.dumps({"prompt": f"question {i + offset}", "chosen": chosen, "rejected": rejected}))
    path.write_text("\n".join(lines) + "\n")
    return path


def baseline_run(data: Path, out: Path, model: str = "baseline:longer") -> Path:
    proc = cli("run", "--model", model, "--benchmark", "pairwise", "--data", str(data), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_summary_records_file_and_prompt_hashes(tmp_path):
    data = pairs_file(tmp_path / "a.jsonl", 3)
    summary = json.loads((baseline_run(data, tmp_path / "run") / C.SUMMARY_FILE).read_text())
    assert summary["data"]["sha256"] == {str(data.resolve()): hashlib.sha256(data.read_bytes()).hexdigest()}
    first = json.loads(data.read_text().splitlines()[0])
    ex = Example("0", "pairwise", "default", first["prompt"], (first["chosen"],), (first["rejected"],))
    assert summary["data"]["prompt_sha256"]["0"] == prompt_hash(ex) and len(summary["data"]["prompt_sha256"]) == 3


@pytest.mark.slow
def test_runs_on_different_files_numbered_alike_are_not_paired(tmp_path):
    """Two files whose records share ids 0..n-1 but not texts: the issue's -98.3 points 'paired' result is gone."""
    a = baseline_run(pairs_file(tmp_path / "a.jsonl", 20), tmp_path / "a")
    b = baseline_run(pairs_file(tmp_path / "b.jsonl", 20, offset=100, longer_chosen=False), tmp_path / "b")
    proc = cli("compare", str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    assert "differences against" not in proc.stdout
    assert "note: the runs scored different data" in " ".join(proc.stderr.split())


@pytest.mark.slow
def test_runs_on_partly_different_files_pair_only_the_same_prompts(tmp_path):
    a = baseline_run(pairs_file(tmp_path / "a.jsonl", 20), tmp_path / "a")
    mixed = tmp_path / "b.jsonl"
    lines = pairs_file(tmp_path / "a.jsonl", 20).read_text().splitlines()
    lines[:5] = pairs_file(tmp_path / "x.jsonl", 5, offset=100).read_text().splitlines()  # 5 other prompts
    mixed.write_text("\n".join(lines) + "\n")
    b = baseline_run(mixed, tmp_path / "b", model="baseline:random")
    proc = cli("compare", str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    assert "differences against" in proc.stdout and "over the 15 prompts" in " ".join(proc.stdout.split())
    assert "5 prompt(s) with the same id differ in content" in " ".join(proc.stderr.split())


@pytest.mark.slow
def test_runs_on_the_same_file_are_paired(tmp_path):
    data = pairs_file(tmp_path / "a.jsonl", 20)
    a, b = baseline_run(data, tmp_path / "a"), baseline_run(data, tmp_path / "b", model="baseline:random")
    proc = cli("compare", str(a), str(b))
    assert proc.returncode == 0 and "over the 20 prompts" in " ".join(proc.stdout.split())
    assert "differ in content" not in proc.stderr


@pytest.mark.parametrize("change", ["edited", "appended"])
def test_report_shows_only_the_texts_that_were_scored(tmp_path, change):
    data = pairs_file(tmp_path / "a.jsonl", 4, longer_chosen=False)  # longer-wins loses every prompt: all shown
    run = baseline_run(data, tmp_path / "run")
    lines = data.read_text().splitlines()
    if change == "edited":
        lines[2] = lines[2].replace("question 2", "question two")
    else:
        lines.append(json.dumps({"prompt": "new", "chosen": "x", "rejected": "y"}))
    data.write_text("\n".join(lines) + "\n")
    proc = cli("report", str(run), "--out", str(tmp_path / "page.html"))
    text = " ".join(proc.stderr.split())
    if change == "edited":
        assert proc.returncode == 2 and "error:" in text and "differ from" in text and "first 2" in text
        assert not (tmp_path / "page.html").exists()
    else:
        assert proc.returncode == 0 and f"note: {data.resolve()} changed since" in text


@pytest.mark.slow
def test_report_of_runs_on_two_versions_of_one_file(tmp_path):
    """A run, then the file edited in place and a second run: the report names the run whose texts are gone (its
    directory) and how to give each run its version; with one --data per run the page is made, the prompts whose
    texts differ left out of its lists and its comparison."""
    data = pairs_file(tmp_path / "a.jsonl", 4, longer_chosen=False)
    kept = tmp_path / "a-v1.jsonl"
    kept.write_text(data.read_text())
    first = baseline_run(data, tmp_path / "first")
    lines = data.read_text().splitlines()
    lines[2] = lines[2].replace("question 2", "question two")
    data.write_text("\n".join(lines) + "\n")
    second = baseline_run(data, tmp_path / "second", model="baseline:random")
    page = tmp_path / "page.html"
    for order in ([first, second], [second, first]):
        proc = cli("report", *map(str, order), "--out", str(page))
        text = " ".join(proc.stderr.split())
        assert proc.returncode == 2 and f"error: {first} (baseline:longer): 1 scored prompt(s) (first 2)" in text
        assert "one --data per run" in text and not page.exists()
    proc = cli("report", str(first), str(second), "--data", str(kept), "--data", str(data), "--out", str(page))
    assert proc.returncode == 0, proc.stderr
    assert "1 prompt(s) differ between the runs' data" in " ".join(proc.stderr.split()) and page.is_file()
    from rmbench_client.report import page as html

    built = html.build([str(first), str(second)], data=[str(kept), str(data)])
    assert sorted(p["id"] for p in built["prompts"]) == ["0", "1", "3"]
    assert built["comparison"]["differences"]["shared"] == 3
    assert "question 2" not in json.dumps(built) and "question two" not in json.dumps(built)


@pytest.mark.slow
def test_report_of_runs_on_two_intact_versions_of_one_file_needs_no_data(tmp_path):
    """Two versions of one file kept side by side (both intact), a run on each: each run is shown with the file its
    own summary names, so the page is made without --data; the prompt whose text differs is left out of its lists
    and its comparison, and no note says a file changed."""
    v1 = pairs_file(tmp_path / "v1.jsonl", 4, longer_chosen=False)
    lines = v1.read_text().splitlines()
    lines[2] = lines[2].replace("question 2", "question two")
    v2 = tmp_path / "v2.jsonl"
    v2.write_text("\n".join(lines) + "\n")
    first = baseline_run(v1, tmp_path / "first")
    second = baseline_run(v2, tmp_path / "second", model="baseline:random")
    page = tmp_path / "page.html"
    for order in ([first, second], [second, first]):
        proc = cli("report", *map(str, order), "--out", str(page))
        text = " ".join(proc.stderr.split())
        assert proc.returncode == 0 and page.is_file(), proc.stderr
        assert "1 prompt(s) differ between the runs' data" in text and "changed since" not in text
        page.unlink()
    from rmbench_client.report import page as html

    built = html.build([str(first), str(second)])
    assert built["sources"] == [str(v1.resolve()), str(v2.resolve())]
    assert sorted(p["id"] for p in built["prompts"]) == ["0", "1", "3"]
    assert built["comparison"]["differences"]["shared"] == 3
    assert "question 2" not in json.dumps(built) and "question two" not in json.dumps(built)


@pytest.mark.slow
def test_compare_of_runs_sharing_no_id_shows_each(tmp_path):
    """No prompt id in common: the table of both runs, and a note saying what each scored (no exit 2)."""
    a = baseline_run(pairs_file(tmp_path / "a.jsonl", 2), tmp_path / "a")
    b = tmp_path / "b.jsonl"
    b.write_text("".join(json.dumps({"id": f"x{i}", "prompt": "q", "chosen": "a long one", "rejected": "n"}) + "\n"
                         for i in range(3)))  # fmt: skip
    proc = cli("compare", str(a), str(baseline_run(b, tmp_path / "b")))
    assert proc.returncode == 0, proc.stderr
    assert "baseline:longer (" in proc.stdout and "differences against" not in proc.stdout
    note = " ".join(proc.stderr.split())
    assert (
        "the runs share no prompt id" in note
        and "baseline:longer: 2 (ids 0, 1)" in note
        and "3 (ids x0, x1, x2)" in note
    )
