"""Without a local copy the data comes from the hub; an unreachable hub is one clear error that says how to
point at a local copy (the hub here is a closed loopback port, so nothing leaves the machine)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = str(Path(sys.executable).with_name("rmbench-client"))


def test_unreachable_hub_names_the_local_alternatives(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RMBENCH_DATA_DIR", "HF_HUB_OFFLINE")}
    env |= {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf"), "RMBENCH_CACHE_DIR": str(tmp_path)}
    for benchmark, repo in (("rm-bench", "THU-KEG/RM-Bench"), ("reward-bench", "allenai/reward-bench")):
        proc = subprocess.run(
            [CLI, "run", "--model", "baseline:longer", "--benchmark", benchmark, "--out", str(tmp_path / "run")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, proc.stderr
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert repo in lines[0] and "--data" in lines[0] and f"data fetch {benchmark}`" in lines[0]
        # the variable holds RM-Bench's files: named only where it is read
        assert ("RMBENCH_DATA_DIR" in lines[0]) == (benchmark == "rm-bench")
    assert "RewardBench's filtered split" in lines[0]  # the layout of the benchmark asked for


def _offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RMBENCH_DATA_DIR", "HF_HUB_OFFLINE")}
    return env | {
        "HF_ENDPOINT": "http://127.0.0.1:9",
        "HF_HOME": str(tmp_path / "hf"),
        "RMBENCH_CACHE_DIR": str(tmp_path),
    }


def _one_error(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def test_an_exported_rmbench_data_dir_is_read_for_rm_bench_only(tmp_path):
    """$RMBENCH_DATA_DIR names RM-Bench's files: another benchmark does not read them (it once failed on RM-Bench's
    records with "unknown subset"), and where it is read and holds nothing, the error names the variable."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = _offline_env(tmp_path) | {"RMBENCH_DATA_DIR": str(empty)}
    args = [CLI, "run", "--model", "baseline:longer", "--out", str(tmp_path / "run")]
    line = _one_error(
        subprocess.run([*args, "--benchmark", "rm-bench"], capture_output=True, text=True, env=env, cwd=tmp_path)
    )
    assert str(empty) in line and "$RMBENCH_DATA_DIR" in line and "*_filtered.json" in line
    line = _one_error(
        subprocess.run([*args, "--benchmark", "reward-bench-2"], capture_output=True, text=True, env=env, cwd=tmp_path)
    )
    assert "allenai/reward-bench-2" in line and str(empty) not in line and "RMBENCH_DATA_DIR" not in line


def test_data_fetch_offline_suggests_what_data_fetch_can_do_and_leaves_no_folder(tmp_path):
    proc = subprocess.run(
        [CLI, "data", "fetch", "judgebench"], capture_output=True, text=True, env=_offline_env(tmp_path), cwd=tmp_path
    )
    line = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and line.startswith("error: ") and "ScalerLab/JudgeBench" in line, proc.stderr
    assert "JudgeBench's gpt and claude splits" in line and "data/judgebench" in line
    assert "--data" not in line and "data fetch" not in line and "RMBENCH_DATA_DIR" not in line
    assert not (tmp_path / "data").exists()
