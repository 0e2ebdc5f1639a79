"""The caller's event loop and signals stay the caller's: the sync API works inside a running loop, cancelling an
async call stops its run as Ctrl-C does (outputs written, saying so, lock released, resumable), and a signal a run
caught goes on to the handler the caller had installed once the outputs are written (or, with
`handle_signals=False`, straight to it). Runs go against a loopback stand-in for a vLLM reward server
(fake_vllm.py) that answers slowly enough to be caught mid-run. Only `rmbench_client`'s public names are used."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_vllm import FakeVllm
from helpers_cli import stored
from helpers_pairs import write_pairs

import rmbench_client as rmb

pytestmark = pytest.mark.timeout(180)
PROMPTS = 80


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_pairs(tmp_path / "pairs.jsonl", PROMPTS)


@pytest.fixture
def slow() -> Iterator[FakeVllm]:
    """A reward server taking 20 ms a request, one request at a time: a run of a few seconds."""
    with FakeVllm("reward", "fake-reward", delay=0.02).start() as fake:
        yield fake


def config(fake: FakeVllm, data: Path) -> dict:
    roles = {"reward": {"served_model": "fake-reward", "endpoints": [fake.url], "concurrency": 1}}
    return {"benchmark": "pairwise", "model": "fake", "roles": roles, "data": str(data)}


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def wait_until(condition, timeout: float = 60) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_evaluate_works_inside_a_running_loop(slow, data, tmp_path):
    """A notebook's or an async trainer's loop is running: the sync call runs on a loop of its own and returns."""

    async def notebook_cell() -> rmb.BenchmarkResult:
        return rmb.evaluate(config(slow, data), out=tmp_path / "run", limit=6)

    result = asyncio.run(notebook_cell())
    assert result.status == "partial" and result.scored == 6 and result.sent == 12


@pytest.mark.slow
def test_a_cancelled_async_run_stops_writes_its_outputs_and_resumes(slow, data, tmp_path):
    out = tmp_path / "run"

    async def cancel_mid_run() -> float:
        task = asyncio.ensure_future(rmb.evaluate_async(config(slow, data), out=out))
        await asyncio.to_thread(wait_until, lambda: slow.units >= 40)  # scoring for a while
        task.cancel()
        cancelled = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - cancelled

    took = asyncio.run(cancel_mid_run())
    assert took < 5  # it stops at once (a second at most, the outputs included, on an idle machine)
    s = summary(out)
    assert s["aborted"] == "cancelled by the caller" and s["complete"] is False and s["failed"] == 0
    assert 0 < s["scored"] < PROMPTS and len((out / "samples.jsonl").read_text().splitlines()) == s["scored"]
    kept = stored(out)
    result = rmb.evaluate(config(slow, data), out=out)  # the lock is free, and only what is missing goes out
    assert result.status == "complete" and result.sent == 2 * PROMPTS - kept


@pytest.mark.slow
def test_wait_for_a_short_timeout_then_the_same_call(slow, data, tmp_path):
    """`asyncio.wait_for(evaluate_async(...), 0.3)`: the timeout cancels the run (in its start-up checks or its
    scoring, as the machine goes); either way the directory is left consistent and free, and the same call then
    completes the run."""
    out = tmp_path / "run"

    async def impatient() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(rmb.evaluate_async(config(slow, data), out=out), 0.3)

    asyncio.run(impatient())
    if (out / "summary.json").exists():  # it had begun scoring: the outputs say why it stopped
        assert summary(out)["aborted"] == "cancelled by the caller"
    assert rmb.evaluate(config(slow, data), out=out).status == "complete"


SCRIPT = """
import json, os, signal, sys
import rmbench_client as rmb

config, out, mode = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
seen = []

def handler(signum, frame):  # a training script's own: Slurm's preemption, say
    seen.append({"signal": signum, "outputs": os.path.exists(os.path.join(out, "summary.json"))})

if mode in ("handler", "caller"):
    signal.signal(signal.SIGTERM, handler)
print("ready", flush=True)
try:
    result = rmb.evaluate(config, out=out, handle_signals=mode != "caller")
except rmb.RunInterrupted as exc:
    print(json.dumps({"raised": exc.result.status, "run_dir": str(exc.run_dir)}), flush=True)
    sys.exit(130)
print(json.dumps({"status": result.status, "seen": seen}), flush=True)
"""


def start(fake: FakeVllm, data: Path, out: Path, mode: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SCRIPT), json.dumps(config(fake, data)), str(out),
                             mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "sig"),
    [("handler", signal.SIGTERM), ("default", signal.SIGINT), ("default", signal.SIGTERM), ("caller", signal.SIGTERM)],
    ids=["the script's SIGTERM handler", "python's SIGINT default", "the system's SIGTERM default", "caller handles"],
)
def test_a_caught_signal_goes_on_to_the_callers_handler(slow, data, tmp_path, mode, sig):
    out = tmp_path / "run"
    proc = start(slow, data, out, mode)
    try:
        wait_until(lambda: slow.units >= 30 and proc.poll() is None)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    s = summary(out)  # the outputs are written in every case
    if mode == "caller":  # signals left to the caller: its handler ran at once, and the run went on to its end
        assert proc.returncode == 0, stderr
        said = json.loads(stdout.splitlines()[-1])
        assert said == {"status": "complete", "seen": [{"signal": sig.value, "outputs": False}]}
        assert s["complete"] and "aborted" not in s
        return
    assert s["aborted"] == f"interrupted by {sig.name}" and s["failed"] == 0 and 0 < s["scored"] < PROMPTS
    if mode == "handler":  # called once the outputs were there; the call then returned the aborted result
        assert proc.returncode == 0, stderr
        said = json.loads(stdout.splitlines()[-1])
        assert said == {"status": "aborted", "seen": [{"signal": sig.value, "outputs": True}]}
    elif sig is signal.SIGINT:  # Python's default: a KeyboardInterrupt, which carries the result
        assert proc.returncode == 130, stderr
        assert json.loads(stdout.splitlines()[-1]) == {"raised": "aborted", "run_dir": str(out)}
    else:  # the system's default: the process ends by the signal, as it would have without the run
        assert proc.returncode == -signal.SIGTERM, stderr


@contextlib.contextmanager
def loading_held(fifo: Path) -> Iterator[Callable[[], bool]]:
    """The data file is a named pipe: a run reading it is held in its data loading until the block ends. Yields
    whether a reader has it open (then, with this writer open and nothing written, the reader waits in its read)."""
    os.mkfifo(fifo)
    writer: list[int] = []

    def reading() -> bool:
        try:
            writer.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as exc:  # ENXIO: nobody reads it yet
            if exc.errno != errno.ENXIO:
                raise
            return False
        return True

    try:
        yield reading
    finally:
        for fd in writer:
            os.close(fd)


@pytest.mark.parametrize(
    ("mode", "sig"),
    [("handler", signal.SIGTERM), ("default", signal.SIGINT), ("default", signal.SIGTERM)],
    ids=["the script's SIGTERM handler", "python's SIGINT default", "the system's SIGTERM default"],
)
def test_a_signal_while_the_data_loads_goes_on_to_the_callers_handler(tmp_path, mode, sig):
    """Before the run began (its data loading), as during its scoring: the caller's handler gets the signal (the call
    then returns an aborted result with nothing scored), Python's SIGINT default raises RunInterrupted, the
    system's SIGTERM default ends the process; the run directory is not touched."""
    fifo, out = tmp_path / "pairs.jsonl", tmp_path / "run"
    baseline = {"model": "baseline:random", "benchmark": "pairwise", "data": str(fifo)}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SCRIPT), json.dumps(baseline), str(out), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        with loading_held(fifo) as reading:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            wait_until(lambda: reading() or proc.poll() is not None)
            proc.send_signal(sig)
        # the pipe's writer closed: Python runs a signal's handler between bytecodes, so a signal that came just
        # before the read began waits for the read to return (an end of file, here) as it would for any read
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert not out.exists()
    if mode == "handler":
        assert proc.returncode == 0, stderr
        assert json.loads(stdout.splitlines()[-1]) == {"status": "aborted", "seen": [{"signal": sig.value,
                                                                                       "outputs": False}]}  # fmt: skip
    elif sig is signal.SIGINT:
        assert proc.returncode == 130, stderr
        assert json.loads(stdout.splitlines()[-1]) == {"raised": "aborted", "run_dir": str(out)}
    else:
        assert proc.returncode == -signal.SIGTERM, stderr


NOTEBOOK = """
import asyncio, json, os, sys, threading
import rmbench_client as rmb

config, out, caller = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]

async def cell():  # a notebook kernel's cell (its loop running, Python's default SIGINT handler), or asyncio.run's
    return rmb.evaluate(config, out=out)

print("ready", flush=True)
try:
    if caller == "asyncio.run":  # its SIGINT handler only cancels the main task, which is the one waiting
        asyncio.run(cell())
    else:
        asyncio.new_event_loop().run_until_complete(cell())
except rmb.RunInterrupted as exc:
    print(json.dumps({"raised": exc.result.status, "run_dir": str(exc.run_dir),
                      "summary": os.path.exists(os.path.join(out, "summary.json")),
                      "runs": [t.name for t in threading.enumerate() if t.name == "rmbench-run"]}), flush=True)
"""


@pytest.mark.parametrize("caller", ["notebook", "asyncio.run"])
def test_ctrl_c_in_a_running_loop_returns_once_the_run_has_written_its_outputs(slow, data, tmp_path, caller):
    """The sync call inside a running loop waits on the run's thread: one Ctrl-C stops the run, and the
    KeyboardInterrupt (RunInterrupted, carrying the result) reaches the caller only once the outputs are written and
    the run's thread has ended (a second Ctrl-C meanwhile: tests/test_event_loop.py). In a notebook cell Python's
    default handler raises it in the waiting thread; under asyncio.run, whose handler only cancels the waiting task,
    the waiting call sees the cancel. The same call then resumes the run."""
    out = tmp_path / "run"
    args = [json.dumps(config(slow, data)), str(out), caller]
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(NOTEBOOK), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        wait_until(lambda: slow.units >= 30 and proc.poll() is None)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    said = json.loads(stdout.splitlines()[-1])
    assert said == {"raised": "aborted", "run_dir": str(out), "summary": True, "runs": []}
    assert took < 5  # about a second: the next look at the task, then the outputs
    s = summary(out)
    assert s["aborted"] == "interrupted (KeyboardInterrupt)" and 0 < s["scored"] < PROMPTS
    kept = stored(out)
    result = rmb.evaluate(config(slow, data), out=out)  # the lock is free, and only what is missing goes out
    assert result.status == "complete" and result.sent == 2 * PROMPTS - kept


SIGTERM_UNDER_ASYNCIO_RUN = """
import asyncio, json, os, signal, sys
import rmbench_client as rmb

config, out, mode = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
seen = []

def handler(signum, frame):  # a training script's own (Slurm's preemption), installed before the call
    summary = os.path.join(out, "summary.json")
    seen.append({"signal": signum, "aborted": json.load(open(summary)).get("aborted") if os.path.exists(summary)
                 else None})

if mode == "handler":
    signal.signal(signal.SIGTERM, handler)

async def main():  # a script under asyncio.run calling the sync API: the run goes on a thread of its own
    print("ready", flush=True)
    result = rmb.evaluate(config, out=out)
    await asyncio.sleep(0)  # the script goes on
    print(json.dumps({"status": result.status, "seen": seen}), flush=True)

asyncio.run(main())
"""


@pytest.mark.parametrize("mode", ["default", "handler"], ids=["the system's SIGTERM default", "the script's handler"])
def test_sigterm_in_a_running_loop_goes_on_to_the_callers_handler_once_the_outputs_are_written(
    slow, data, tmp_path, mode
):
    """The run is on a thread of its own, where it cannot take signals: the waiting main thread takes SIGTERM for
    it. The run stops and writes its outputs; then the system's default ends the process by the signal (the same
    call then resumes the run), or the script's own handler is called once (after the outputs) and the call
    returns the aborted result."""
    out = tmp_path / "run"
    args = [json.dumps(config(slow, data)), str(out), mode]
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SIGTERM_UNDER_ASYNCIO_RUN), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        wait_until(lambda: slow.units >= 30 and proc.poll() is None)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    s = summary(out)
    assert s["aborted"] == "interrupted by SIGTERM" and s["failed"] == 0 and 0 < s["scored"] < PROMPTS
    if mode == "handler":
        assert proc.returncode == 0, stderr
        said = json.loads(stdout.splitlines()[-1])
        assert said == {"status": "aborted", "seen": [{"signal": signal.SIGTERM, "aborted": "interrupted by SIGTERM"}]}
        return
    assert proc.returncode == -signal.SIGTERM, stderr
    kept = stored(out)
    result = rmb.evaluate(config(slow, data), out=out)  # the lock is free, and only what is missing goes out
    assert result.status == "complete" and result.sent == 2 * PROMPTS - kept


def feed(fifo: Path, data: Path) -> None:
    """The data, into the named pipe a run is reading (nothing where no process reads it any more)."""
    try:
        pipe = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:  # ENXIO: its reader has gone
        if exc.errno != errno.ENXIO:
            raise
        return
    try:
        os.write(pipe, data.read_bytes())
    finally:
        os.close(pipe)


@pytest.mark.parametrize("caller", ["notebook", "asyncio.run"])
def test_ctrl_c_in_a_running_loop_while_the_data_loads_raises_run_interrupted_with_the_result(tmp_path, caller):
    """Ctrl-C while the run (on its own thread, the caller's loop running) loads its data: as in the main thread, the
    call raises RunInterrupted carrying an aborted result that scored nothing, and the run directory is not made
    (the stop reached the run as a cancel, not a signal: it let a bare KeyboardInterrupt out, without the result)."""
    fifo, out = tmp_path / "pairs.jsonl", tmp_path / "run"
    baseline = {"model": "baseline:random", "benchmark": "pairwise", "data": str(fifo)}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(NOTEBOOK), json.dumps(baseline), str(out), caller],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        with loading_held(fifo) as reading:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            wait_until(lambda: reading() or proc.poll() is not None)
            proc.send_signal(signal.SIGINT)
            time.sleep(0.5)  # the stop reaches the run (asyncio.run's cancel is seen within 0.1 s) while it reads
            feed(fifo, write_pairs(tmp_path / "pairs-file.jsonl", 4))  # then the data: the run goes on to the stop
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    said = json.loads(stdout.splitlines()[-1])
    assert said == {"raised": "aborted", "run_dir": str(out), "summary": False, "runs": []}
    assert not out.exists()


def test_sigterm_twice_while_the_data_loads_in_a_running_loop_reaches_the_scripts_handler(tmp_path):
    """Two SIGTERMs while a run held for asyncio.run loads its data (which a signal cannot cut short on the run's
    thread): the script's own handler gets each (the second at once, the first once the run has ended), the call
    returns the aborted result, the run directory is not made. The second left the process at once (os._exit 143),
    the script's handler never called."""
    fifo, out = tmp_path / "pairs.jsonl", tmp_path / "run"
    baseline = {"model": "baseline:random", "benchmark": "pairwise", "data": str(fifo)}
    args = [json.dumps(baseline), str(out), "handler"]
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SIGTERM_UNDER_ASYNCIO_RUN), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        with loading_held(fifo) as reading:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            wait_until(lambda: reading() or proc.poll() is not None)
            for _ in range(2):
                proc.send_signal(signal.SIGTERM)
                time.sleep(0.3)
            feed(fifo, write_pairs(tmp_path / "pairs-file.jsonl", 4))
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    said = json.loads(stdout.splitlines()[-1])
    assert said == {"status": "aborted", "seen": [{"signal": signal.SIGTERM, "aborted": None}] * 2}
    assert not out.exists()
