"""The run directory: the earlier outputs stay until a run's own replace them when it ends (the store goes with
--fresh once the start-up checks have passed, never before); one directory per model and benchmark; one run at a
time; atomic writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_cli import CLI, cli, write_config
from helpers_data import require_rmbench

from rmbench_client import constants as C
from rmbench_client.benchmarks import registry
from rmbench_client.benchmarks.rm_bench import constants as rmbench_c
from rmbench_client.benchmarks.shared import eval_sets
from rmbench_client.errors import RunLockedError
from rmbench_client.results.run_directory import RunDirectory, _probe_read_only, running_pid, write_atomic

DERIVED = [
    C.SUMMARY_FILE,
    C.SAMPLES_FILE,
    C.FAILURES_FILE,
    rmbench_c.RESULTS_FILE,
    C.REPORT_FILE,
    "heatmap-chat.png",
    "heatmap-overall.png",
    f"{eval_sets.RESULTS_DIR}/org/model.json",
    f"{eval_sets.SCORES_DIR}/model.json",
]


def fill(path: Path) -> None:
    for name in [*DERIVED, C.STORE_FILE, C.CONFIG_FILE, "notes.txt"]:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text("old")


def test_the_earlier_outputs_stay_until_a_run_replaces_them_and_fresh_removes_the_store(tmp_path):
    """A run begins (its start-up checks passed): only --fresh's store goes, the earlier outputs stay. When it ends,
    its samples, failures and summary replace theirs, and the page and the benchmark's own files of the earlier
    result go; the store, the config and other files stay."""
    fill(tmp_path)
    own = (*registry.get("rm-bench").own_outputs, *registry.get("reward-bench").own_outputs)
    with RunDirectory(tmp_path) as run_dir:
        progress = run_dir.begin(fresh=False)
        progress.write("a line\n")
        progress.close()
        assert all((tmp_path / name).read_text() == "old" for name in DERIVED)  # nothing of the earlier result goes
        assert (tmp_path / C.PROGRESS_FILE).read_text() == "a line\n"
        new = {C.SAMPLES_FILE: iter(["new\n"]), C.FAILURES_FILE: "", C.SUMMARY_FILE: "{}\n"}
        run_dir.replace_outputs(new, stale=(C.REPORT_FILE, *own))
        run_dir.finish()
    assert [(tmp_path / n).read_text() for n in new] == ["new\n", "", "{}\n"]
    assert not any((tmp_path / name).exists() for name in DERIVED if name not in new)
    assert not (tmp_path / C.PROGRESS_FILE).exists()
    assert {p.name for p in tmp_path.iterdir()} == {*new, C.STORE_FILE, C.CONFIG_FILE, "notes.txt", C.LOCK_FILE}
    with RunDirectory(tmp_path) as run_dir:
        run_dir.begin(fresh=True).close()
    assert not (tmp_path / C.STORE_FILE).exists() and (tmp_path / C.SUMMARY_FILE).read_text() == "{}\n"


def test_one_run_at_a_time(tmp_path):
    with RunDirectory(tmp_path):
        with pytest.raises(RunLockedError, match=r"another run \(pid \d+\)"):
            RunDirectory(tmp_path).__enter__()
    with RunDirectory(tmp_path):  # released when the first run ended
        pass


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    path = write_atomic(tmp_path / "a" / "summary.json", "{}\n")
    assert path.read_text() == "{}\n" and sorted(p.name for p in path.parent.iterdir()) == ["summary.json"]


@pytest.mark.slow
def test_a_run_that_cannot_reach_its_server_leaves_the_previous_run_byte_identical(tmp_path):
    """The preflight fails (nothing listens on the port): the earlier complete run's outputs, config and store stay
    exactly as they were, with --fresh too."""
    data, out = require_rmbench(), tmp_path / "run"
    first = cli("run", "--model", "baseline:longer", "--data", str(data), "--out", str(out), "--limit", "3")
    assert first.returncode == 0, first.stderr
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != C.LOCK_FILE}
    assert {Path(C.SUMMARY_FILE), Path(C.FAILURES_FILE), Path(C.SAMPLES_FILE), Path(C.STORE_FILE)} <= set(before)
    dead = write_config(tmp_path / "dead.yaml", ["http://127.0.0.1:9"])  # the discard port: connection refused
    for extra in ([], ["--fresh"]):
        failed = cli("run", "--config", str(dead), "--data", str(data), "--out", str(out), "--no-progress", *extra)
        assert failed.returncode != 0 and "error:" in failed.stderr and "127.0.0.1:9" in failed.stderr
        after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != C.LOCK_FILE}
        assert after == before


@pytest.mark.slow
def test_one_models_benchmarks_get_their_own_default_directories(tmp_path):
    """Without --out a model's RM-Bench run and its pairwise run keep both results: runs/<model>/<benchmark>."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"prompt": "p", "chosen": "a longer answer", "rejected": "short"}\n')
    runs = {"rm-bench": str(require_rmbench()), "pairwise": str(pairs)}
    for benchmark, data in runs.items():
        args = ["run", "--model", "baseline:longer", "--benchmark", benchmark, "--data", data, "--limit", "2"]
        proc = subprocess.run([CLI, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert proc.returncode == 0, proc.stderr
    for benchmark in runs:
        summary = json.loads((tmp_path / "runs" / "baseline-longer" / benchmark / C.SUMMARY_FILE).read_text())
        assert summary["benchmark"] == benchmark


def test_the_lock_names_its_holder_and_goes_with_its_process(tmp_path):
    """While another process holds the directory, a run is refused naming that process's pid, and `running_pid`
    and `status` say it; killed (nothing cleans up), its lock goes with it."""
    (tmp_path / C.CONFIG_FILE).write_text("model: baseline:random\n")
    hold = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from rmbench_client.results.run_directory import RunDirectory\n"
        "with RunDirectory(Path(sys.argv[1])):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(120)\n"
    )
    with subprocess.Popen([sys.executable, "-c", hold, str(tmp_path)], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            with pytest.raises(RunLockedError, match=rf"another run \(pid {holder.pid}\)"):
                RunDirectory(tmp_path).__enter__()
            assert running_pid(tmp_path) == holder.pid  # a refused run and a look leave the holder's pid in place
            assert _probe_read_only(tmp_path / C.LOCK_FILE) == holder.pid  # a look that cannot open it to write
            shown = cli("status", str(tmp_path), "--json")
            assert shown.returncode == 0 and json.loads(shown.stdout)["pid"] == holder.pid, shown.stderr
        finally:
            holder.kill()
    assert running_pid(tmp_path) is None and _probe_read_only(tmp_path / C.LOCK_FILE) is None
    with RunDirectory(tmp_path):
        assert running_pid(tmp_path) == os.getpid()
    assert json.loads(cli("status", str(tmp_path), "--json").stdout)["state"] == "not running"
