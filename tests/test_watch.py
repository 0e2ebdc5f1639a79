"""`watch` over a directory a "training" writes checkpoints into: copies of the tiny reward model, one of them
incomplete for a while (its weights cut short). The baseline test kills the CLI's watch and restarts it; the
server test serves every checkpoint through the real vLLM CPU build (`serve`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import REPO, TINY_MODELS, ensure_server_side, port
from helpers_cli import CLI, cli, one_error_line
from helpers_data import require_rmbench
from helpers_pairs import write_pairs

import rmbench_client as rmb


def write_checkpoint(root: Path, step: int, complete: bool = True) -> Path:
    """models/tiny/reward as checkpoint-<step>; incomplete: the weights cut to half (as while being written)."""
    folder = root / f"checkpoint-{step}"
    shutil.copytree(TINY_MODELS / "reward", folder, dirs_exist_ok=True)
    if not complete:
        weights = folder / "model.safetensors"
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    return folder


def events(out: Path) -> list[str]:
    path = out / "watch.jsonl"
    return [json.loads(line)["checkpoint"] for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_a_cut_checkpoint_waits_and_a_killed_watch_evaluates_only_what_is_missing(tmp_path):
    data = require_rmbench()
    root, out = tmp_path / "train", tmp_path / "eval"
    root.mkdir()
    config = tmp_path / "baseline.yaml"
    config.write_text(yaml.safe_dump({"model": "baseline:random", "data": str(data)}))
    write_checkpoint(root, 100)
    write_checkpoint(root, 200, complete=False)
    args = [CLI, "watch", str(root), "--config", str(config), "--out", str(out), "--benchmarks", "rm-bench",
            "--limit", "4", "--poll", "0.2", "--settle", "0.5", "--data", str(data.parent)]  # fmt: skip
    env = os.environ | {"RMBENCH_DATA_DIR": str(data)}
    first = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while events(out) != ["checkpoint-100"]:
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.1)
        time.sleep(1.5)  # several passes: the cut checkpoint is not taken
        assert events(out) == ["checkpoint-100"]
    finally:
        first.send_signal(signal.SIGKILL)  # a crash: no clean-up at all
        first.wait()
    done_at = (out / "checkpoint-100" / "rm-bench" / "summary.json").stat().st_mtime_ns
    write_checkpoint(root, 200)  # now whole
    write_checkpoint(root, 300)
    time.sleep(0.6)
    again = subprocess.run([*args, "--once"], capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0, again.stderr
    assert events(out) == ["checkpoint-100", "checkpoint-200", "checkpoint-300"]  # none twice
    assert (out / "checkpoint-100" / "rm-bench" / "summary.json").stat().st_mtime_ns == done_at
    table = json.loads((out / "watch.json").read_text())
    assert [c["step"] for c in table["checkpoints"]] == [100, 200, 300]
    assert all(c["results"]["rm-bench"]["status"] == "partial" and c["done"] for c in table["checkpoints"])
    assert (out / "watch.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| checkpoint-300 | 300 |" in (out / "watch.md").read_text() and "checkpoint-300" in again.stdout


@pytest.mark.server
@pytest.mark.heavy  # a vLLM server per checkpoint: minutes; `make test-heavy`
def test_watch_serves_each_checkpoint_through_vllm(tmp_path):
    """Three checkpoints written one after another (the second cut short for a pass), each served by the real vLLM
    CPU build through `serve`: three run directories, each evaluated once, the table and the chart."""
    ensure_server_side()  # the server environment and the tiny models (a fresh clone may run this first)
    data = require_rmbench()
    root, out = tmp_path / "train", tmp_path / "eval"
    root.mkdir()
    url = f"http://127.0.0.1:{port(40)}"
    serve_spec = {"engine": "vllm-cpu", "path": str(TINY_MODELS / "reward"), "dtype": "float32",
                  "max_model_len": 4096}  # fmt: skip
    reward = {"served_model": "tiny-reward", "endpoints": [url], "serve": serve_spec}
    cfg = rmb.load_config({"model": "tiny-reward", "roles": {"reward": reward}, "reward": {"template": "auto"}})
    write_checkpoint(root, 100)
    write_checkpoint(root, 200, complete=False)
    steps = iter([lambda: write_checkpoint(root, 200), lambda: write_checkpoint(root, 300)])
    passes = []

    def training() -> bool:
        """Called after each pass: the next bit of "training" (after which nothing is left: stop)."""
        passes.append(events(out))
        step = next(steps, None)
        if step is None:
            return True
        step()
        return False

    rows = rmb.watch(root, cfg, out=out, benchmarks=["rm-bench"], data_root=data.parent, limit=4, repo_root=REPO,
                     poll=0.1, settle=0.0, stop=training)  # fmt: skip
    assert passes[0] == ["checkpoint-100"]  # the cut one waited
    assert events(out) == ["checkpoint-100", "checkpoint-200", "checkpoint-300"]
    assert [r.step for r in rows] == [100, 200, 300]
    for row in rows:
        result = rmb.load_result(row.directory / "rm-bench")
        served = result.summary["identity"]["models"]["reward"]["served"]
        assert result.scored == 4 and served["root"] == str(root / row.checkpoint)  # the checkpoint was served
        assert row.done and row.results["rm-bench"].headline == result.headline
    assert (out / "watch.png").stat().st_size > 0 and (out / "watch.md").is_file()


def test_watch_mistakes_are_one_error_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"model": "baseline:random"}))
    one_error_line(cli("watch", str(tmp_path / "absent"), "--config", str(config)), 2, "no such directory")
    one_error_line(cli("watch", str(config), "--config", str(config)), 2, "c.yaml: not a directory to watch")
    one_error_line(cli("watch", str(tmp_path), "--config", str(tmp_path / "no.yaml")), 2, "config file not found")
    served = {"model": "m", "roles": {"reward": {"served_model": "m", "endpoints": ["http://127.0.0.1:9"]}}}
    config.write_text(yaml.safe_dump(served))
    one_error_line(cli("watch", str(tmp_path), "--config", str(config)), 2, "no serve section")
    with pytest.raises(rmb.ConfigError, match="no serve section"):
        rmb.watch(tmp_path, served, once=True)


def test_a_poll_not_above_0_or_a_negative_settle_is_refused(tmp_path):
    """--poll 0 spun, a negative one raised from time.sleep after the first pass; --settle 0 stays allowed."""
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"model": "baseline:random"}))
    for flag, value in (("--poll", "0"), ("--poll", "-1"), ("--settle", "-5")):
        proc = cli("watch", str(tmp_path), "--config", str(config), "--once", flag, value, "--out", str(tmp_path / "o"))
        assert proc.returncode == 2 and f"argument {flag}: '{value}' is not a number of seconds" in proc.stderr
        assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()
    for poll, settle in ((0.0, 0.0), (1.0, -5.0)):
        with pytest.raises(rmb.ConfigError, match="poll is seconds above 0"):
            rmb.watch(tmp_path, config, out=tmp_path / "o", poll=poll, settle=settle, once=True)
    assert not (tmp_path / "o").exists()


def small_checkpoint(root: Path, step: int) -> Path:
    """A checkpoint the stand-in server "serves": config.json and a whole (empty) safetensors file."""
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    header = b"{}"
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    return folder


def rows_by_name(rows: list[rmb.WatchRow]) -> dict[str, rmb.WatchRow]:
    return {r.checkpoint: r for r in rows}


@pytest.mark.slow
def test_a_checkpoint_whose_server_fails_mid_run_is_evaluated_again_to_the_end(tmp_path, monkeypatch):
    """Each checkpoint is served by `serve` through a stand-in server environment (fake_server_venv.py); the one
    listed in the faults file dies after 10 scoring requests, once. Its run is aborted: the checkpoint is not done,
    not plotted, and the next pass evaluates it again to the end; a restarted watch does the same for one that
    failed before the restart, and the command's exit code says which pass left one unfinished."""
    from fake_server_venv import FAULTS_ENV, make_venv

    root, out, data = tmp_path / "train", tmp_path / "eval", tmp_path / "data" / "pairwise"
    write_pairs(data / "pairs.jsonl", 40)
    faults = tmp_path / "faults.json"
    monkeypatch.setenv("RMBENCH_SERVER_VENV", str(make_venv(tmp_path / "server-venv")))
    monkeypatch.setenv(FAULTS_ENV, str(faults))
    serve_spec = {"engine": "vllm-cpu", "path": str(root), "max_model_len": 4096}
    reward = {"served_model": "fake-reward", "endpoints": [f"http://127.0.0.1:{port(43)}"], "concurrency": 1,
              "serve": serve_spec}  # fmt: skip
    cfg = {"model": "fake", "roles": {"reward": reward}, "client": {"all_down_patience": 1}}
    first = small_checkpoint(root, 100)
    small_checkpoint(root, 200)
    faults.write_text(json.dumps({str(first.resolve()): 10}))
    seen: list[list[str]] = []

    def stop() -> bool:
        table = json.loads((out / "watch.json").read_text())
        seen.append([f"{c['checkpoint']}:{c['done']}" for c in table["checkpoints"]])
        return all(c["done"] for c in table["checkpoints"])

    rows = rmb.watch(root, cfg, out=out, benchmarks=["pairwise"], data_root=data.parent, repo_root=REPO, poll=0.1,
                     settle=0.0, stop=stop)  # fmt: skip
    assert seen == [["checkpoint-100:False", "checkpoint-200:True"], ["checkpoint-100:True", "checkpoint-200:True"]]
    assert [json.loads(line)["done"] for line in (out / "watch.jsonl").read_text().splitlines()] == [False, True, True]
    assert all(r.done and r.results["pairwise"].status == "complete" for r in rows)
    assert rmb.load_result(out / "checkpoint-100" / "pairwise").scored == 40

    # a restart: the new checkpoint's server fails in the first watch, which exits 1; the next one finishes it
    third = small_checkpoint(root, 300)
    faults.write_text(json.dumps({str(third.resolve()): 10}))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))
    args = ["watch", str(root), "--config", str(config), "--out", str(out), "--benchmarks", "pairwise", "--data",
            str(data.parent), "--settle", "0", "--once"]  # fmt: skip
    done_at = (out / "checkpoint-200" / "pairwise" / "summary.json").stat().st_mtime_ns
    failed = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert failed.returncode == 1 and "not evaluated to the end: checkpoint-300" in failed.stderr, failed.stderr
    cell = json.loads((out / "checkpoint-300" / "watch-tried.json").read_text())["results"]["pairwise"]
    assert cell["status"] == "aborted" and "stayed down" in cell["why"]
    assert "| checkpoint-300 | 300 | aborted (retried) |" in (out / "watch.md").read_text()  # no number for it
    again = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert again.returncode == 0, again.stderr
    assert all(r.done for r in rmb.watch(root, cfg, out=out, data_root=data.parent, once=True, settle=0.0))
    assert not (out / "checkpoint-300" / "watch-tried.json").exists()
    assert (out / "checkpoint-200" / "pairwise" / "summary.json").stat().st_mtime_ns == done_at  # not again
    assert events(out) == ["checkpoint-100", "checkpoint-200", "checkpoint-100", "checkpoint-300", "checkpoint-300"]


def test_a_benchmark_a_preempted_suite_never_ran_is_tried_again_not_missing(tmp_path):
    """Slurm's SIGTERM during the first benchmark of a checkpoint, with the training script's own handler (which
    returns): the suite stops there, and the benchmark it never ran, whose data is there, is aborted (tried again
    on the next pass), not missing (which would mark the checkpoint done); the watch ends there, the next
    checkpoint not begun (a preempted job has seconds left)."""
    root, out, data = tmp_path / "train", tmp_path / "eval", tmp_path / "data"
    write_pairs(data / "pairwise" / "pairs.jsonl", 3000)
    (data / "rm-bench").symlink_to(require_rmbench())
    small_checkpoint(root, 1)
    small_checkpoint(root, 2)
    caught: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda s, f: caught.append(s))

    def preempt() -> None:  # once the first benchmark is scoring
        progress = out / "checkpoint-1" / "pairwise" / "progress.jsonl"
        while not (progress.exists() and progress.stat().st_size):
            time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGTERM)

    cfg = {"model": "baseline:random", "type": "baseline"}
    options = {"out": out, "benchmarks": ["pairwise", "rm-bench"], "data_root": data, "limit": 600, "once": True,
               "settle": 0.0}  # fmt: skip
    try:
        threading.Thread(target=preempt, daemon=True).start()
        (row,) = rmb.watch(root, cfg, **options)  # the watch ends with the preempted checkpoint: 2 is not begun
        assert caught == [signal.SIGTERM] and not row.done and row.checkpoint == "checkpoint-1"
        assert row.results["rm-bench"].status == "aborted", row.results
        assert row.results["rm-bench"].why == "the suite was interrupted by SIGTERM before it"  # SuiteResult.not_run
        assert not (out / "checkpoint-2").exists()
        again, second = rmb.watch(root, cfg, **options)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert again.done and {c.status for c in again.results.values()} <= {"complete", "partial"}
    assert second.checkpoint == "checkpoint-2" and second.done
    assert rmb.load_result(out / "checkpoint-1" / "rm-bench").scored > 0


def test_the_callers_sigterm_handler_is_called_once_the_checkpoints_row_is_written(tmp_path):
    """The training script's SIGTERM handler gets the signal after the watch wrote the stopped checkpoint's row
    (watch.jsonl, watch.json): a handler that ends the process (sys.exit, as a preempted job does) leaves the
    table saying what was tried, and the next watch call resumes."""
    root, out, data = tmp_path / "train", tmp_path / "eval", tmp_path / "data"
    write_pairs(data / "pairwise" / "pairs.jsonl", 3000)
    (data / "rm-bench").symlink_to(require_rmbench())  # not begun: the row says the checkpoint is not done
    small_checkpoint(root, 1)
    seen: list[tuple[bool, bool]] = []

    class Preempted(Exception):
        pass

    def handler(signum: int, frame: object) -> None:
        seen.append(((out / "watch.jsonl").exists(), (out / "watch.json").exists()))
        raise Preempted

    previous = signal.signal(signal.SIGTERM, handler)

    def preempt() -> None:  # once the benchmark is scoring
        progress = out / "checkpoint-1" / "pairwise" / "progress.jsonl"
        while not (progress.exists() and progress.stat().st_size):
            time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGTERM)

    cfg = {"model": "baseline:random", "type": "baseline"}
    options = {
        "out": out,
        "benchmarks": ["pairwise", "rm-bench"],
        "data_root": data,
        "limit": 600,
        "once": True,
        "settle": 0.0,
    }
    try:
        threading.Thread(target=preempt, daemon=True).start()
        with pytest.raises(Preempted):
            rmb.watch(root, cfg, **options)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == [(True, True)]
    (line,) = [json.loads(x) for x in (out / "watch.jsonl").read_text().splitlines()]
    assert line["checkpoint"] == "checkpoint-1" and line["done"] is False
    (again,) = rmb.watch(root, cfg, **options)
    assert again.done


SIGTERM_DEFAULT_SCRIPT = """
import json, os, signal, sys, threading, time
from pathlib import Path
import rmbench_client as rmb
root, out, data, repo = (Path(a) for a in sys.argv[1:5])
reward = {"served_model": "fake-reward", "endpoints": [sys.argv[5]], "concurrency": 1,
          "serve": {"engine": "vllm-cpu", "path": str(root), "max_model_len": 4096}}
def preempt():
    progress = out / "checkpoint-100" / "pairwise" / "progress.jsonl"
    while not (progress.exists() and progress.stat().st_size):
        time.sleep(0.005)
    os.kill(os.getpid(), signal.SIGTERM)  # Slurm's preemption; the script keeps the system's default
threading.Thread(target=preempt, daemon=True).start()
rmb.watch(root, {"model": "fake", "roles": {"reward": reward}}, out=out, benchmarks=["pairwise"],
          data_root=data, repo_root=repo, settle=0.0, once=True)
"""


def test_sigterm_under_the_systems_default_ends_the_watch_with_its_server_stopped_and_its_row_written(tmp_path):
    """A script that keeps SIGTERM's default: the process ends (143), but only once the checkpoint's server (in
    its own process group) is stopped and the checkpoint's row written; it ended the process inside `serve`'s
    block before, leaving the server listening and no watch.json."""
    from fake_server_venv import make_venv

    root, out, data = tmp_path / "train", tmp_path / "eval", tmp_path / "data"
    write_pairs(data / "pairwise" / "pairs.jsonl", 400)
    small_checkpoint(root, 100)
    url = f"http://127.0.0.1:{port(44)}"
    env = os.environ | {"RMBENCH_SERVER_VENV": str(make_venv(tmp_path / "server-venv"))}
    args = [str(root), str(out), str(data), str(REPO), url]
    proc = subprocess.run([sys.executable, "-c", SIGTERM_DEFAULT_SCRIPT, *args], capture_output=True, text=True,
                          timeout=300, env=env)  # fmt: skip
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    (line,) = [json.loads(x) for x in (out / "watch.jsonl").read_text().splitlines()]
    assert line["checkpoint"] == "checkpoint-100" and (out / "watch.json").exists()
    with pytest.raises(httpx.ConnectError):  # the checkpoint's server is gone
        httpx.get(f"{url}/health", timeout=5)
