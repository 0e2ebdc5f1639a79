"""The event loop a run uses: uvloop where it is installed, asyncio's own when asked for or where it is not."""

from __future__ import annotations

import asyncio
import builtins
import os
from typing import Any

import pytest
from helpers_cli import cli, one_error_line
from helpers_data import require_rmbench

from rmbench_client import constants as C
from rmbench_client import event_loop


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


def test_asyncio_where_uvloop_is_missing(monkeypatch):
    monkeypatch.delenv(C.EVENT_LOOP_ENV, raising=False)
    real_import = builtins.__import__

    def no_uvloop(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "uvloop":
            raise ImportError("no uvloop here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_uvloop)
    assert event_loop.name() == "asyncio"
    assert event_loop.run(loop_kind()) == "asyncio"


def test_an_unknown_value_is_one_error_before_the_run_directory_is_made(tmp_path):
    """RMBENCH_EVENT_LOOP=foo ran on uvloop, saying nothing."""
    out = tmp_path / "run"
    args = ["run", "--model", "baseline:longer", "--data", str(require_rmbench()), "--out", str(out), "--limit", "2"]
    proc = cli(*args, env={**os.environ, C.EVENT_LOOP_ENV: "foo"})
    one_error_line(proc, 2, f"{C.EVENT_LOOP_ENV}='foo': not an event loop (asyncio or uvloop")
    assert not out.exists()
    assert cli(*args, env={**os.environ, C.EVENT_LOOP_ENV: "asyncio"}).returncode == 0
