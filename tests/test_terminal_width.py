"""Terminal output at 80 columns never cuts an identifier or a number: `compare`, `run` and `status`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml
from helpers_cli import CLI
from helpers_data import require_rmbench

LONG = ["meta-llama/Llama-3.1-8B-Instruct-RM-checkpoint-12000", "meta-llama/Llama-3.1-8B-Instruct-RM-checkpoint-14000"]


def at_80(*args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"COLUMNS": "80", "LINES": "50"}
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[str]:
    """Two baseline runs renamed to long model names, and a third."""
    tmp = tmp_path_factory.mktemp("width")
    out = []
    for name, baseline in [*zip(LONG, ("longer", "markdown"), strict=True), ("third", "random")]:
        run = tmp / baseline
        proc = at_80("run", "--model", f"baseline:{baseline}", "--data", str(require_rmbench()), "--limit", "30",
                     "--out", str(run), "--no-progress", "--no-heatmaps")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "…" not in proc.stdout and max(map(len, proc.stdout.splitlines())) <= 80  # run's own table
        summary = json.loads((run / "summary.json").read_text())
        if name != "third":  # as a served reward model's run names it, in the summary and the run's config
            summary["model"] = name
            config = yaml.safe_load((run / "config.yaml").read_text())
            config |= {"model": name, "type": "reward", "roles": {"reward": {"served_model": "rm", "endpoints": [
                "http://127.0.0.1:9"]}}}  # fmt: skip
            (run / "config.yaml").write_text(yaml.safe_dump(config))
        (run / "summary.json").write_text(json.dumps(summary))
        out.append(str(run))
    return out


@pytest.mark.slow
def test_compare_prints_every_name_and_number_whole(runs):
    proc = at_80("compare", *runs)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "…" not in proc.stdout and max(map(len, lines)) <= 80
    for name in LONG:
        assert any(name in line for line in lines)
    for header in ("chat", "easy", "normal", "hard", "avg", "complete"):
        assert f" {header} " in proc.stdout


def test_status_prints_the_name_whole(runs):
    proc = at_80("status", runs[0])
    assert proc.returncode == 0, proc.stderr
    assert LONG[0] in proc.stdout and "…" not in proc.stdout


def test_tables_still_fit_one_table_when_they_can(runs, tmp_path):
    short = [str(shutil.copytree(r, tmp_path / f"r{i}")) for i, r in enumerate(runs)]
    for path in short:
        summary = json.loads((tmp_path / path / "summary.json").read_text())
        summary["model"] = summary["model"][-6:]
        (tmp_path / path / "summary.json").write_text(json.dumps(summary))
    proc = at_80("compare", *short)
    assert proc.stdout.count("┏") == 2  # the runs' table and the differences, each whole in one piece
