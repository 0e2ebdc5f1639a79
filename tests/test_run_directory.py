"""The run directory: derived outputs cleared when a run starts (the store too with --fresh), one run at a time,
atomic writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmbench_client import constants as C
from rmbench_client.errors import RunLockedError
from rmbench_client.run_directory import RunDirectory, write_atomic

DERIVED = [
    C.SUMMARY_FILE,
    C.SAMPLES_FILE,
    C.FAILURES_FILE,
    C.RMBENCH_RESULTS_FILE,
    C.REPORT_FILE,
    "heatmap-chat.png",
    "heatmap-overall.png",
    f"{C.REWARDBENCH_RESULTS_DIR}/org/model.json",
    f"{C.REWARDBENCH_SCORES_DIR}/model.json",
]


def fill(path: Path) -> None:
    for name in [*DERIVED, C.STORE_FILE, C.CONFIG_FILE, "notes.txt"]:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text("old")


def test_a_new_run_clears_every_derived_file_and_fresh_the_store(tmp_path):
    fill(tmp_path)
    with RunDirectory(tmp_path) as run_dir:
        run_dir.clear(fresh=False)
    assert not any((tmp_path / name).exists() for name in DERIVED)
    assert (tmp_path / C.STORE_FILE).exists() and (tmp_path / "notes.txt").exists()  # the store and others stay
    with RunDirectory(tmp_path) as run_dir:
        run_dir.clear(fresh=True)
    assert not (tmp_path / C.STORE_FILE).exists() and (tmp_path / "notes.txt").exists()


def test_one_run_at_a_time(tmp_path):
    with RunDirectory(tmp_path):
        with pytest.raises(RunLockedError, match=r"another run \(pid \d+\)"):
            RunDirectory(tmp_path).__enter__()
    with RunDirectory(tmp_path):  # released when the first run ended
        pass


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    path = write_atomic(tmp_path / "a" / "summary.json", "{}\n")
    assert path.read_text() == "{}\n" and sorted(p.name for p in path.parent.iterdir()) == ["summary.json"]
