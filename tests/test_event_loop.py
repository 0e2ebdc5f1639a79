"""The event loop a run uses: uvloop where it is installed, asyncio's own when asked for or where it is not; a run
called where a loop is running waits on its own thread to its end, Ctrl-C or not."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from helpers_cli import cli, one_error_line
from helpers_data import require_rmbench

from rmbench_client import constants as C
from rmbench_client.errors import ConfigError
from rmbench_client.run import event_loop


async def loop_kind() -> str:
    return type(asyncio.get_running_loop()).__module__.split(".")[0]


def test_uvloop_where_installed(monkeypatch):
    pytest.importorskip("uvloop")
    monkeypatch.delenv(C.EVENT_LOOP_ENV, raising=False)
    assert event_loop.name() == "uvloop"
    assert event_loop.run(loop_kind()) == "uvloop"


def test_asyncio_when_asked(monkeypatch):
    monkeypatch.setenv(C.EVENT_LOOP_ENV, "asyncio")
    assert event_loop.name() == "asyncio"
    assert event_loop.run(loop_kind()) == "asyncio"


def without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import uvloop` fails, as where it is not installed."""
    real_import = builtins.__import__

    def no_uvloop(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "uvloop":
            raise ImportError("no uvloop here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_uvloop)


def test_asyncio_where_uvloop_is_missing(monkeypatch):
    monkeypatch.delenv(C.EVENT_LOOP_ENV, raising=False)
    without_uvloop(monkeypatch)
    assert event_loop.name() == "asyncio"
    assert event_loop.run(loop_kind()) == "asyncio"


def test_uvloop_asked_for_where_it_is_missing_is_an_error(monkeypatch):
    monkeypatch.setenv(C.EVENT_LOOP_ENV, "uvloop")
    without_uvloop(monkeypatch)
    with pytest.raises(ConfigError, match=f"{C.EVENT_LOOP_ENV}=uvloop: uvloop is not installed"):
        event_loop.loop_factory()


def test_an_unknown_value_is_one_error_before_the_run_directory_is_made(tmp_path):
    """RMBENCH_EVENT_LOOP=foo ran on uvloop, saying nothing."""
    out = tmp_path / "run"
    args = ["run", "--model", "baseline:longer", "--data", str(require_rmbench()), "--out", str(out), "--limit", "2"]
    proc = cli(*args, env={**os.environ, C.EVENT_LOOP_ENV: "foo"})
    one_error_line(proc, 2, f"{C.EVENT_LOOP_ENV}='foo': not an event loop (asyncio or uvloop")
    assert not out.exists()
    assert cli(*args, env={**os.environ, C.EVENT_LOOP_ENV: "asyncio"}).returncode == 0


SECOND_CTRL_C = """
import asyncio, json, os, signal, threading, time
from rmbench_client.run import event_loop

said, release = [], threading.Event()

def run():  # a run that takes its time to write its outputs once stopped
    time.sleep(0.5)  # the caller is waiting by then
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
    release.wait(5)  # a stop that was lost: the run still ends, late
    time.sleep(0.3)
    said.append("outputs written")
    return "result"

def stop(exc):  # the second Ctrl-C comes while the run is being stopped: it lands inside this call
    said.append(f"stop {type(exc).__name__}")
    if said.count(said[-1]) == 1:
        os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.1)
    release.set()

async def cell():
    return event_loop.off_loop(run, stop, lambda exc, value: RuntimeError(f"{type(exc).__name__} after {value}"))

try:
    asyncio.new_event_loop().run_until_complete(cell())
except BaseException as exc:
    said.append(f"raised {exc}")
alive = [t.name for t in threading.enumerate() if t.name == "rmbench-run"]
print(json.dumps({"said": said, "alive": alive}))
"""


def test_a_second_ctrl_c_while_the_run_stops_still_waits_for_its_end():
    """A Ctrl-C inside the stopping itself (the window where a second press lands) neither leaves the wait early
    nor loses the stop: the exception goes up only after the run's thread has ended (a subprocess: real SIGINTs,
    Python's default handler)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SECOND_CTRL_C)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["alive"] == [] and found["said"][-2:] == ["outputs written", "raised KeyboardInterrupt after result"]
    assert set(found["said"][:-2]) == {"stop KeyboardInterrupt"}


UNDER_ASYNCIO_RUN = """
import asyncio, json, os, signal, threading, time
from rmbench_client.run import event_loop

said, release = [], threading.Event()

def run():
    time.sleep(0.3)  # the caller is waiting by then
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: asyncio.run's handler cancels the main task, the one waiting
    release.wait(10)  # a stop that was lost: the run goes on to its end
    said.append("outputs written" if release.is_set() else "ran to its end")
    return "result"

def stop(exc):
    said.append(f"stop {type(exc).__name__}")
    release.set()

async def main():
    try:
        event_loop.off_loop(run, stop, lambda exc, value: RuntimeError(f"{type(exc).__name__} after {value}"))
    except RuntimeError as exc:
        said.append(f"raised {exc}")
    try:
        await asyncio.sleep(0)  # the cancel is still the task's: asyncio delivers it at the next await
    except asyncio.CancelledError:
        said.append("cancelled")
        raise

started = time.monotonic()
try:
    asyncio.run(main())
except KeyboardInterrupt:
    said.append("KeyboardInterrupt")
print(json.dumps({"said": said, "took": time.monotonic() - started}))
"""


def test_ctrl_c_under_asyncio_run_stops_the_run_and_the_cancel_goes_on():
    """asyncio.run's SIGINT handler only cancels its main task, which a sync call blocks: the waiting call sees the
    cancel, stops the run as a KeyboardInterrupt would, raises once the run has ended, and leaves the cancel to
    asyncio (which asyncio.run turns into KeyboardInterrupt)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(UNDER_ASYNCIO_RUN)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["said"] == ["stop KeyboardInterrupt", "outputs written", "raised KeyboardInterrupt after result",
                             "cancelled", "KeyboardInterrupt"]  # fmt: skip
    assert found["took"] < 5  # 0.3 s, and the next look at the task


def test_a_cancel_caught_before_the_call_does_not_stop_the_run():
    """A task that caught a cancellation earlier still says it was asked once (`cancelling`): only a new request
    stops the run."""
    stopped: list[BaseException] = []

    async def main() -> str:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(1)
        return event_loop.off_loop(lambda: time.sleep(0.5) or "result", stopped.append)

    assert asyncio.run(main()) == "result" and stopped == []
