"""How a run ends, against a loopback stand-in for vLLM (fake_reward_faults.py): a signal during the start-up checks,
a config error the start-up checks find (the head's width), an error during scoring, an answer trickled past its
deadline, HTML under HTTP 200. Whatever the end, the run directory holds the earlier complete result untouched or
the new partial one with its reason; nothing scored is lost, and a rerun completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from fake_reward_faults import MODEL, FakeVllm
from helpers_cli import CLI, cli, one_error_line, stored, summary

from rmbench_client import constants as C
from rmbench_client.config.loading import load_config
from rmbench_client.errors import ConfigError
from rmbench_client.results.run_directory import STORE_FILES
from rmbench_client.run import runner, scoring_loop
from rmbench_client.run.interrupts import Interrupted, RunSignals

pytestmark = pytest.mark.timeout(120)
PROMPTS = 6


def config(tmp_path: Path, url: str, **extra: object) -> Path:
    data = tmp_path / "prefs.jsonl"
    records = [{"id": f"p{i}", "prompt": f"question {i}?", "chosen": f"good {i}", "rejected": f"bad {i}"} for i in
               range(PROMPTS)]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg = {
        "benchmark": "pairwise",
        "model": "fake",
        "data": str(data),
        "out": str(tmp_path / "run"),
        "roles": {"reward": {"served_model": MODEL, "endpoints": [url]}},
        "reward": {"template": "server"},
        **extra,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def snapshot(out: Path) -> dict[str, bytes]:
    """Every file of the run directory but its lock, byte for byte."""
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file() and p.name != ".lock"}


def complete_run(tmp_path: Path) -> dict[str, bytes]:
    with FakeVllm() as fake:
        proc = cli("run", "--config", str(config(tmp_path, fake.url)), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "run"
    assert summary(out)["complete"] and stored(out) == 2 * PROMPTS
    return snapshot(out)


@pytest.mark.parametrize(
    ("sig", "hang", "fresh"),
    [(signal.SIGINT, "/v1/models", False), (signal.SIGTERM, "/pooling", True)],  # the preflight; the fingerprint
)
def test_a_signal_during_the_start_up_checks_ends_the_run_and_changes_nothing(tmp_path, sig, hang, fresh):
    before = complete_run(tmp_path)
    assert {"summary.json", "samples.jsonl", "scores.sqlite"} <= set(before)
    with FakeVllm(hang=(hang,)) as fake:
        args = [CLI, "run", "--config", str(config(tmp_path, fake.url)), "--no-progress", *(["--fresh"] * fresh)]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert fake.requested.wait(60), proc.stderr
            proc.send_signal(sig)
            sent = time.monotonic()
            _, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        elapsed = time.monotonic() - sent
    assert elapsed <= 5 and proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig], (elapsed, err)
    (line,) = err.strip().splitlines()
    assert f"interrupted by {sig.name} before the run began: nothing in" in line
    assert snapshot(tmp_path / "run") == before  # summary, samples and the store (--fresh too), byte for byte


@pytest.mark.slow
def test_a_second_signal_while_scoring_still_writes_the_partial_result(tmp_path):
    """The first signal stops the scoring; a second one right after (Ctrl-C, then a kill) is not a way to lose
    the outputs: the run ends within 5 s with the partial result and the first signal's reason written."""
    complete_run(tmp_path)
    with FakeVllm(width=2, fault="trickle", healthy_pooling=2 + PROMPTS, trickle_s=1.0) as fake:
        args = [CLI, "run", "--config", str(config(tmp_path, fake.url)), "--no-progress"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while fake.counts["/pooling"] < 2 + 2 * PROMPTS and time.monotonic() < deadline:  # every request out
                time.sleep(0.02)
            proc.send_signal(signal.SIGINT)
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)  # another signal: two of one kind may arrive as one
            _, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        elapsed = time.monotonic() - sent
    assert elapsed <= 5 and proc.returncode == 130 and "Traceback" not in err, (elapsed, err)
    s = summary(tmp_path / "run")
    assert s["complete"] is False and s["aborted"] == "interrupted by SIGINT" and s["scored"] < PROMPTS
    assert len((tmp_path / "run" / "samples.jsonl").read_text().splitlines()) == s["scored"]


@pytest.mark.parametrize(
    ("option", "named"), [({"head_index": 2}, "reward.head_index is 2"), ({"head_weights": [1, 1]}, "2 weights")]
)
def test_a_head_option_the_head_cannot_take_is_refused_before_anything_changes(tmp_path, option, named):
    before = complete_run(tmp_path)
    with FakeVllm(width=1) as fake:
        path = config(tmp_path, fake.url, reward={"template": "server", **option})
        proc = cli("run", "--config", str(path), "--no-progress")
        assert fake.counts["/pooling"] == 2  # the fingerprint's probes only: nothing was scored
    one_error_line(proc, 2, named, "1 outputs")
    assert snapshot(tmp_path / "run") == before


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (RuntimeError("a bug"), "stopped by an unexpected error: RuntimeError: a bug"),
        (ConfigError("found late"), "stopped by an error: found late"),
    ],
)
def test_an_error_during_scoring_writes_what_was_scored(tmp_path, monkeypatch, error, reason):
    complete_run(tmp_path)
    real = scoring_loop.prompt_scores
    calls = []

    def fails_on_the_fourth(*args):  # noqa: ANN002, ANN202
        calls.append(1)
        if len(calls) == 4:
            raise error
        return real(*args)

    with FakeVllm(width=2) as fake:  # another head: another model, scored afresh beside the earlier values
        cfg = load_config(str(config(tmp_path, fake.url)), {})
        monkeypatch.setattr(scoring_loop, "prompt_scores", fails_on_the_fourth)
        with pytest.raises(type(error)):
            runner.run(cfg, progress=False)
        out = tmp_path / "run"
        s = summary(out)
        assert s["complete"] is False and s["aborted"] == reason and 3 <= s["scored"] < PROMPTS
        assert any(reason in why for why in s["partial"])
        assert len((out / "samples.jsonl").read_text().splitlines()) == s["scored"]
        kept = stored(out)
        assert kept >= 2 * PROMPTS + 2 * s["scored"]  # the earlier model's values, and every prompt's scored

        monkeypatch.setattr(scoring_loop, "prompt_scores", real)
        sent, probes = fake.counts["/pooling"], fake.probes
        result = runner.run(cfg, progress=False)
        assert result.all_scored and result.summary["complete"]
        # what was stored went out once: the rerun asked for at most the prompts not yet stored (beside the
        # fingerprint probes of its start-up and connection checks)
        assert fake.counts["/pooling"] - sent - (fake.probes - probes) == stored(out) - kept


@pytest.mark.slow
def test_a_trickled_answer_ends_at_the_request_deadline(tmp_path):
    """One byte every 0.2 s restarts the read timeout each time: only the whole request's deadline ends it."""
    # taken out after its timeouts, the endpoint must pass its identity check (a trickled fingerprint) to come
    # back: it never does, and the run ends once the role has had no endpoint for the patience
    client = {"read_timeout": 1.0, "request_timeout": 1.5, "max_retries": 1, "all_down_patience": 2}
    with FakeVllm(fault="trickle", healthy_pooling=2, trickle_s=0.2) as fake:
        started = time.monotonic()
        proc = cli("run", "--config", str(config(tmp_path, fake.url, client=client)), "--no-progress", timeout=60)
        elapsed = time.monotonic() - started
    assert proc.returncode == 1 and elapsed < 30, (elapsed, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    s = summary(tmp_path / "run")
    assert s["scored"] == 0 and s["complete"] is False and "stayed down" in s["aborted"], s
    assert "client.request_timeout" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.slow
def test_html_under_http_200_fails_its_prompt_at_once_and_a_rerun_completes(tmp_path):
    with FakeVllm(fault="html", fault_probes=False) as fake:  # the identity checks' probes are answered
        path = config(tmp_path, fake.url)
        proc = cli("run", "--config", str(path), "--no-progress", timeout=60)
        pooling = fake.counts["/pooling"] - fake.probes
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert pooling == 2 * PROMPTS  # each response once: never retried
    assert "endpoint is down" not in proc.stderr and "taken out" not in proc.stderr
    s = summary(tmp_path / "run")
    assert s["failed"] == PROMPTS and s["complete"] is False
    reasons = [json.loads(x)["reason"] for x in (tmp_path / "run" / "failures.jsonl").read_text().splitlines()]
    assert all("answer is not JSON" in r for r in reasons)

    with FakeVllm() as healthy:
        proc = cli("run", "--config", str(config(tmp_path, healthy.url)), "--no-progress")
    assert proc.returncode == 0 and summary(tmp_path / "run")["complete"], proc.stderr


def test_a_signal_before_the_run_touches_its_directory_raises_and_after_it_waits():
    with pytest.raises(Interrupted) as info, RunSignals():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises first
    assert info.value.signal is signal.SIGTERM
    with RunSignals() as signals:
        signals.touch()
        os.kill(os.getpid(), signal.SIGINT)  # noted only: the outputs are written first
        time.sleep(0.01)
    assert signals.signal is signal.SIGINT


def test_a_waiting_thread_holds_sigterm_for_a_run_on_another_thread():
    """`held` (the main thread waiting for a run on its own thread): SIGTERM only (SIGINT reaches the run through
    the waiting call), nothing with `handle` False, the caller's handler back afterwards; a signal no run took (it
    came after the run had ended) goes to that handler then, not before."""
    seen: list[int] = []

    def handler(signum: int, frame: object) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    sigint = signal.getsignal(signal.SIGINT)
    try:
        with RunSignals(handle=False).held():
            assert signal.getsignal(signal.SIGTERM) is handler
        signals = RunSignals()
        with signals.held():
            assert signal.getsignal(signal.SIGTERM) is not handler and signal.getsignal(signal.SIGINT) is sigint
            os.kill(os.getpid(), signal.SIGTERM)  # no run in this thread to raise into: noted
            time.sleep(0.01)
            assert signals.signal is signal.SIGTERM and seen == []
        assert signal.getsignal(signal.SIGTERM) is handler and seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_held_sigterm_before_the_run_touches_its_directory_ends_it_as_interrupted(tmp_path, monkeypatch):
    """A run on a thread of its own while the main thread holds SIGTERM for it (`held`), signalled after its data
    loaded and before its directory changed: `Interrupted` (as in the main thread), not the cancellation of its task,
    and the directory unchanged."""
    data = tmp_path / "prefs.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"q {i}?", "chosen": "a", "rejected": "b"}) + "\n"
                            for i in range(4)))  # fmt: skip
    cfg = load_config(None, {"model": "baseline:random", "benchmark": "pairwise", "data": str(data),
                             "out": str(tmp_path / "run")})  # fmt: skip
    signals = RunSignals()
    files = runner.RunFiles

    def signalled(*args: object) -> object:  # the directory is made and locked, nothing in it changed yet
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while signals.signal is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return files(*args)

    monkeypatch.setattr(runner, "RunFiles", signalled)
    raised: list[BaseException] = []

    def target() -> None:
        try:
            runner.run(cfg, progress=False, heatmaps=False, signals=signals)
        except BaseException as exc:
            raised.append(exc)

    handed: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda sig, frame: handed.append(sig))
    try:
        with signals.held():
            thread = threading.Thread(target=target)
            thread.start()
            while thread.is_alive():
                thread.join(0.05)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert len(raised) == 1 and isinstance(raised[0], Interrupted) and raised[0].signal == signal.SIGTERM, raised
    assert handed == [signal.SIGTERM]  # handed on to the caller's handler once the run's thread ended
    left = {p.name for p in (tmp_path / "run").iterdir()}  # the lock, and the store opened (empty) to check it
    assert left <= {C.LOCK_FILE, *STORE_FILES} and C.CONFIG_FILE not in left, left
