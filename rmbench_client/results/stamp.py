"""The stamp every result carries (`summary.json`'s and `suite.json`'s `stamp`, the report page, the API's results):
which client made it (its version), on which Python, with which versions of the libraries that can change a number,
when, and the command line or API call that made it with its config. Nothing secret is in it: the command, the call
and the config are masked (redaction.py: an endpoint's credentials, a server flag's key, every key read).

The libraries: numpy always (every number's arithmetic, the bootstrap); jinja2 where the client rendered a chat
template (the run's identity names the template's digest); rewardbench where a judge was asked in reward-bench's
words (its prompts are read from that package). What the servers ran (the vLLM release) is the summary's
`identity` and `answered_by`, not the stamp's.

What made a result is set once at the entry, a command line (`cli.main`) or an API call, for what runs inside it
(`made_by`): the outermost counts, so a `watch` command's runs name that command, not the calls it makes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib.metadata
import os
import platform
import shlex
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, UnsetType

from ..redaction import hidden, masked, masked_args

if TYPE_CHECKING:
    from ..config.schema import RunConfig

PROGRAM = "rmbench-client"
PACKAGE = "rmbench_client"


class Stamp(msgspec.Struct, kw_only=True):
    """What made a result, in the order it is written; `command` or `call` says what was run."""

    version: str  # the client's (version.py)
    python: str  # "3.11.7 (CPython)"
    libraries: dict[str, str] = {}  # name -> installed version, of those that can change a number
    written: str = ""  # when (UTC, ISO 8601, seconds)
    command: str | UnsetType = UNSET  # the command line, shell-quoted as it can be typed again
    call: str | UnsetType = UNSET  # the Python API call (rmbench_client.evaluate(...))
    reproduces: str | UnsetType = UNSET  # a reproduction's: the run directory it ran again (`reproduce`)
    config: dict[str, Any] = {}  # the run's config; a suite's: the config every benchmark's run starts from


@dataclass(frozen=True)
class Origin:
    """What an entry point knows of what it was asked: the command's arguments (after the program's name) or the
    API call's text; and the run directory a reproduction runs again."""

    command: tuple[str, ...] | None = None
    call: str | None = None
    reproduces: str | None = None


_ORIGIN: ContextVar[Origin | None] = ContextVar("rmbench_client_origin", default=None)


@contextlib.contextmanager
def made_by(origin: Origin) -> Iterator[None]:
    """Results written inside the block were made by `origin`, unless an outer block said already; a
    `reproduces` given here joins the outer origin (the command line's `reproduce` and the call it makes)."""
    outer = _ORIGIN.get()
    if outer is not None:
        origin = dataclasses.replace(outer, reproduces=origin.reproduces or outer.reproduces)
    token = _ORIGIN.set(origin)
    try:
        yield
    finally:
        _ORIGIN.reset(token)


def _argument(value: object) -> str:
    """A positional argument of an API call as text: a path as given; a RunConfig or a mapping by its type (the
    stamp's `config` holds the config whole)."""
    return repr(str(value)) if isinstance(value, str | os.PathLike) else f"<{type(value).__name__}>"


def call_text(function: str, *positional: object, **keywords: Any) -> str:
    """An API call as text: the function, its positional arguments (`_argument`) and the keywords given (None,
    False and empty ones left out; paths as text)."""
    given = [f"{k}={str(v)!r}" if isinstance(v, os.PathLike) else f"{k}={v!r}"
             for k, v in keywords.items() if v is not None and v is not False and v != {} and v != ()]  # fmt: skip
    return f"{PACKAGE}.{function}({', '.join([*map(_argument, positional), *given])})"


def _python() -> str:
    return f"{platform.python_version()} ({platform.python_implementation()})"


def _renders_templates(identity: Mapping[str, Any]) -> bool:
    """Whether a run's identity names a chat template the client rendered (its digest), at any depth."""
    for key, value in identity.items():
        if key == "template" and isinstance(value, Mapping) and value.get("digest"):
            return True
        if isinstance(value, Mapping) and _renders_templates(value):
            return True
    return False


def libraries(cfg: RunConfig | None, identity: Mapping[str, Any]) -> dict[str, str]:
    """The installed versions of the libraries that can change this run's numbers (module docstring)."""
    names = ["numpy"]
    if _renders_templates(identity):
        names.append("jinja2")
    if cfg is not None and cfg.type == "judge" and cfg.judge.prompt == "reward-bench":
        names.append("rewardbench")
    found = {}
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


def config_data(cfg: RunConfig) -> dict[str, Any]:
    """The config as the stamp records it: masked, its data and run directory as absolute paths (the command may
    have been run from anywhere)."""
    data = cfg.to_data(exclude_none=True)
    for key in ("data", "out"):
        if isinstance(data.get(key), str):
            data[key] = os.path.abspath(data[key])
    return dict(masked(data))


def stamp(cfg: RunConfig | None, identity: Mapping[str, Any] | None = None) -> Stamp:
    """The stamp of a result written now, by what the current entry says made it (`made_by`)."""
    from ..version import client_version

    origin = _ORIGIN.get() or Origin()
    found = Stamp(
        version=client_version(),
        python=_python(),
        libraries=libraries(cfg, identity or {}),
        written=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        config=config_data(cfg) if cfg is not None else {},
    )
    if origin.command is not None:
        found.command = shlex.join([PROGRAM, *masked_args(list(origin.command))])
    if origin.call is not None:
        found.call = hidden(origin.call)
    if origin.reproduces is not None:
        found.reproduces = str(Path(origin.reproduces).absolute())
    return found


def read_stamp(raw: object) -> Stamp | None:
    """A result's stamp read back; None where it has none (written before stamps) or none this version reads."""
    if not isinstance(raw, Mapping):
        return None
    try:
        return msgspec.convert(raw, Stamp)
    except msgspec.ValidationError:
        return None
