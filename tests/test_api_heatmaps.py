"""RM-Bench's heatmaps: off by default in the Python API (a checkpoint's run should not pay matplotlib's CPU), on
in the command line, drawn from the API when asked. Baseline runs: no servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_cli import cli
from helpers_data import require_rmbench

import rmbench_client as rmb

BASELINE = {"model": "baseline:random", "benchmark": "rm-bench"}


def pngs(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("*.png"))


@pytest.mark.slow
def test_heatmaps_are_off_in_the_api_unless_asked_and_on_in_the_cli(tmp_path):
    data = require_rmbench()
    plain = rmb.evaluate(BASELINE, data=data, out=tmp_path / "api", limit=4)
    drawn = rmb.evaluate(BASELINE, data=data, out=tmp_path / "drawn", limit=4, heatmaps=True)
    proc = cli("run", "--model", "baseline:random", "--data", str(data), "--out", str(tmp_path / "cli"),
               "--limit", "4", "--no-progress")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert plain.scored == drawn.scored == 4 and pngs(tmp_path / "api") == []
    assert "heatmap-overall.png" in pngs(tmp_path / "drawn")
    assert pngs(tmp_path / "cli") == pngs(tmp_path / "drawn")
