"""RewardMATH, M-RewardBench and IF-RewardBench as every built-in runs (baselines, no server): a run stopped short
(`limit`) and run again to the end leaves what one whole run leaves (resume), and `compare` gives each headline
number's paired difference against the first run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from new_benchmarks_fixture import write_if, write_mrb, write_rewardmath

import rmbench_client as rmb

DATA: dict[str, Callable[[Path], Path]] = {
    "rewardmath": lambda root: write_rewardmath(root / "RewardMATH_direct.json", problems=10),
    "m-reward-bench": lambda root: write_mrb(root / "mrb", ("deu_Latn", "eng_Latn"), per_subset=1),
    "if-reward-bench": lambda root: write_if(root / "if_rewardbench.json", instructions=12),
}


def _kept(run: Path) -> tuple[dict, list[str]]:
    """A run's summary but for what differs between any two runs (its identity, its seed, its stamp: the call and
    its time), and its lines in order."""
    summary = json.loads((run / "summary.json").read_text())
    lines = sorted((run / "samples.jsonl").read_text().splitlines())
    return {k: v for k, v in summary.items() if k not in ("identity", "seed", "stamp")}, lines


@pytest.mark.parametrize("benchmark", list(DATA))
def test_resumed_runs_equal_whole_ones_and_compare_gives_paired_differences(tmp_path: Path, benchmark: str) -> None:
    data = DATA[benchmark](tmp_path)
    runs = {name: tmp_path / name for name in ("resumed", "whole", "random")}
    part = rmb.evaluate({"model": "baseline:longer"}, benchmark=benchmark, data=data, out=runs["resumed"], limit=3)
    resumed = rmb.evaluate({"model": "baseline:longer"}, benchmark=benchmark, data=data, out=runs["resumed"])
    whole = rmb.evaluate({"model": "baseline:longer"}, benchmark=benchmark, data=data, out=runs["whole"])
    other = rmb.evaluate({"model": "baseline:random"}, benchmark=benchmark, data=data, out=runs["random"])
    assert part.scored == 3 < resumed.scored == whole.scored
    assert _kept(runs["resumed"]) == _kept(runs["whole"])
    compared = rmb.compare([runs["whole"], runs["random"]])
    assert compared.benchmark == benchmark and compared.shared == whole.scored
    difference = compared.differences[0][whole.headline_name]
    assert other.headline.value is not None and whole.headline.value is not None
    assert difference.value == pytest.approx(other.headline.value - whole.headline.value)
    assert difference.low <= difference.value <= difference.high and 0 < difference.p <= 1
