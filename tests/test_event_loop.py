"""The event loop a run uses: uvloop where it is installed, asyncio's own when asked for or where it is not."""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

import pytest

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
