"""`run --workers N`: several scoring processes over one run directory give what one process gives, sample for
sample, with one store and one summary, and lose nothing on Ctrl-C.

The quick tests run against the bench's simulated vLLM endpoints (bench/sim_server.py: vLLM's answer shapes,
deterministic values); the last one against a real vLLM CPU server.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from conftest import REPO, port
from helpers_cli import (
    CLI,
    RUN_TIMEOUT,
    TINY_REWARD_TEMPLATE,
    cli,
    one_error_line,
    sample_lines,
    stored,
    summary,
    write_config,
)
from helpers_data import same_up_to_batching

from rmbench_client.config.schema import RunConfig
from rmbench_client.run.workers import shards, worker_config

SIM_SERVER = REPO / "bench" / "sim_server.py"
SIM_TEMPLATE = (  # what bench/sim_server.py renders (its `render`)
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
PROMPTS = "120"  # of the chat and safety-response files


@contextmanager
def sim_endpoints(ports: list[int]) -> Iterator[list[str]]:
    proc = subprocess.Popen(
        [sys.executable, str(SIM_SERVER), "--ports", ",".join(map(str, ports))], stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        yield [f"http://127.0.0.1:{p}" for p in ports]
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def sim_config(tmp_path: Path, urls: list[str]) -> Path:
    template = tmp_path / "sim.jinja"
    template.write_text(SIM_TEMPLATE)
    cfg = {
        "model": "sim-reward",
        "roles": {"reward": {"served_model": "sim-reward", "endpoints": urls}},
        "reward": {"template": str(template)},
    }
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run(config: Path, data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    args = ["run", "--config", str(config), "--data", str(data), "--out", str(out), "--no-progress", "--json"]
    return cli(*args, "--limit", PROMPTS, *extra)


def without_config(s: dict) -> dict:
    """The summary but its stamp (the command and config, `--workers` among them, and when it was written) and how
    many prompts each endpoint answered (the URLs, every one of the three)."""
    answered = sorted(a["url"] for a in s.get("answered_by", []))
    return {k: v for k, v in s.items() if k not in ("stamp", "answered_by")} | {"answered_by": answered}


def dry_run(config: Path, data: Path, out: Path) -> dict:
    proc = run(config, data, out, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


@pytest.mark.slow
def test_workers_equal_one_process(fault_data, tmp_path):
    with sim_endpoints([port(86), port(87), port(88)]) as urls:
        config = sim_config(tmp_path, urls)
        one = run(config, fault_data, tmp_path / "one")
        three = run(config, fault_data, tmp_path / "three", "--workers", "3")
    assert one.returncode == 0, one.stderr[-2000:]
    assert three.returncode == 0, three.stderr[-2000:]
    samples = sample_lines(tmp_path / "three")
    assert len(samples) == int(PROMPTS)
    assert samples == sample_lines(tmp_path / "one")  # which endpoint answered a prompt may differ
    assert without_config(summary(tmp_path / "three")) == without_config(summary(tmp_path / "one"))
    # one store, one summary: the same files as one process leaves, and nothing per worker
    assert sorted(os.listdir(tmp_path / "three")) == sorted(os.listdir(tmp_path / "one"))
    assert stored(tmp_path / "three") == stored(tmp_path / "one")


def workers_of(pid: int) -> set[int]:
    """The worker processes (multiprocessing's spawned children) of process `pid`."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if f"\nPPid:\t{pid}\n" in status and b"spawn_main" in cmdline:
            found.add(int(entry))
    return found


def gone(pid: int) -> bool:
    """The process has ended (a zombie that no one reaped counts as ended)."""
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def stored_now(out: Path) -> int:
    """Units in the run's store so far (none while it is being made)."""
    try:
        return stored(out) if (out / "scores.sqlite").exists() else 0
    except sqlite3.OperationalError:
        return 0


def two_workers(config: Path, data: Path, out: Path, *extra: str) -> subprocess.Popen:
    """`run --workers 2` in the background, two requests at a time (one per worker) of ~0.13 s each: a run of
    several seconds; in its own process group, as a terminal would start it."""
    args = ["run", "--config", str(config), "--data", str(data), "--out", str(out), "--no-progress"]
    return subprocess.Popen(
        [CLI, *args, "--workers", "2", "--concurrency", "2", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_stored(out: Path, units: int, proc: subprocess.Popen) -> set[int]:
    """Until the run's store holds `units` values; the run's two workers."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while stored_now(out) < units:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return workers_of(proc.pid)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "group", "code"),
    [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)],
    ids=["ctrl-c to the process group", "sigterm to the run"],
)
def test_workers_interrupted_lose_nothing(fault_data, tmp_path, sig, group, code):
    out = tmp_path / "run"
    with sim_endpoints([port(89)]) as urls:
        config = sim_config(tmp_path, urls)
        proc = two_workers(config, fault_data, out, "--limit", PROMPTS)
        workers = wait_stored(out, 60, proc)
        assert len(workers) == 2
        assert (out / "progress.jsonl").read_text().count("\n") > 0  # `status` sees the workers' progress
        if group:
            os.killpg(proc.pid, sig)  # a terminal's Ctrl-C: the run's process group
        else:
            proc.send_signal(sig)  # `kill PID`: the run alone, which passes it on
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err[-2000:]
        assert all(gone(pid) for pid in workers), "a worker outlived the run"

        interrupted = summary(out)
        lines = (out / "samples.jsonl").read_text().splitlines()
        plan = dry_run(config, fault_data, out)
        assert 0 < interrupted["scored"] < int(PROMPTS)
        # the signal is the reason; the prompts it left untried are no failures, for `status` neither
        assert interrupted["aborted"] == f"interrupted by {sig.name}" and interrupted["failed"] == 0
        assert (out / "failures.jsonl").read_text() == ""
        said = json.loads(cli("status", str(out), "--json").stdout)
        assert said["failed"] == 0 and said["aborted"] == f"interrupted by {sig.name}", said
        # every prompt the store completes is in the outputs: nothing the workers committed is lost
        assert len(lines) == interrupted["scored"] == plan["stored_prompts"]
        assert stored(out) == plan["stored_units"]

        resumed = run(config, fault_data, out)  # one process, only what is missing
        whole = run(config, fault_data, tmp_path / "whole")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert whole.returncode == 0, whole.stderr[-2000:]
    assert json.loads(resumed.stdout)["scored"] == int(PROMPTS)
    assert (out / "samples.jsonl").read_text() == (tmp_path / "whole" / "samples.jsonl").read_text()


@pytest.mark.server
def test_workers_on_a_real_server(cpu_servers, fault_data, tmp_path):
    config = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"]])
    one = run(config, fault_data, tmp_path / "one")
    two = run(config, fault_data, tmp_path / "two", "--workers", "2")
    assert one.returncode == 0, one.stderr[-2000:]
    assert two.returncode == 0, two.stderr[-2000:]
    assert TINY_REWARD_TEMPLATE.exists()
    samples = [json.loads(line) for line in (tmp_path / "two" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == int(PROMPTS)
    want = [json.loads(line) for line in (tmp_path / "one" / "samples.jsonl").read_text().splitlines()]
    assert same_up_to_batching(samples, want), (samples, want)
    assert same_up_to_batching(without_config(summary(tmp_path / "two")), without_config(summary(tmp_path / "one")))
    assert sorted(os.listdir(tmp_path / "two")) == sorted(os.listdir(tmp_path / "one"))


@pytest.mark.slow
def test_workers_stop_when_the_run_is_killed(fault_data, tmp_path):
    out = tmp_path / "run"
    with sim_endpoints([port(90)]) as urls:
        config = sim_config(tmp_path, urls)
        proc = two_workers(config, fault_data, out)  # every prompt (286): the shards would take ~20 s more
        workers = wait_stored(out, 30, proc)
        assert len(workers) == 2
        proc.kill()
        proc.wait()  # not communicate(): the workers hold the run's stdout and stderr while they live
        deadline = time.monotonic() + 5
        while not all(gone(pid) for pid in workers):
            assert time.monotonic() < deadline, "a worker of a killed run kept running"
            time.sleep(0.05)
        proc.communicate()  # closes the pipes
        kept = stored(out)
        resumed = run(config, fault_data, out)  # the first PROMPTS of them
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads(resumed.stdout)["scored"] == int(PROMPTS)
    assert stored(out) >= kept


def test_workers_must_be_at_least_one():
    proc = cli("run", "--endpoint", "http://127.0.0.1:9", "--served-model", "x", "--workers", "0")
    one_error_line(proc, 2, "client.workers")


def test_each_endpoint_keeps_the_runs_load():
    cfg = RunConfig.from_data(
        {
            "model": "m",
            "roles": {"reward": {"served_model": "m", "endpoints": ["http://127.0.0.1:9"], "concurrency": 8}},
            "client": {"rate_limit": 30.0, "workers": 3},
        }
    )
    one = worker_config(cfg, 3)
    assert one.roles["reward"].concurrency == 2  # 3 workers x 2 <= 8 requests at once per endpoint
    assert one.client.rate_limit == 10.0 and one.client.workers == 1
    single = cfg.replace(roles={"reward": cfg.roles["reward"].replace(concurrency=1)})
    assert worker_config(single, 3).roles["reward"].concurrency == 1  # never below one
    assert shards(list(range(10)), 3) == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert shards([0], 3) == [[0]]  # fewer prompts than workers: fewer workers
