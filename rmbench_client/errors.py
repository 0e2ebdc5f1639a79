"""Exceptions of rmbench-client.

RmbError                      anything this package raises on purpose
├── UserError                 a mistake the user can fix; the CLI prints one line and exits 2
│   ├── DataError             a dataset or score file is unreadable or invalid (names file and record)
│   ├── ConfigError           a config file or flag is invalid
│   │   └── EndpointChanged   an endpoint's server now serves another model (found when a connection is checked)
│   └── RunLockedError        another run holds the run directory
├── StorageError              the run directory cannot be written (a full disk, a read-only file system): names the
│                             directory and the OS error; the earlier outputs stay, the store keeps what it holds
├── ServerError               a server could not be started or stopped
├── TrackerError              MLflow or W&B refused what a tracker logged (the run's files are written)
└── EndpointError             an endpoint is unusable (wrong key, every endpoint down): the run stops
    ├── RetryableError        worth another try (timeouts, 408/429/5xx, dropped connections)
    │   └── PinBroken         the endpoint a prompt's requests are kept on left: the prompt is scored again, whole
    └── SampleError           retrying cannot fix it (400, too long, NaN); recorded for that sample
        └── ShapeError        an answer that does not have the documented shape (names endpoint and field)

`located` reads where a msgspec validation error points, for the one-line errors of configs and answers.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .constants import LOW_SPACE_BYTES
from .redaction import hidden


class RmbError(Exception):
    """Base of every deliberate error. Its message never holds a secret the process has read (redaction.py): many
    carry a server's own error text, which may echo the request's Authorization header."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(hidden(a) if isinstance(a, str) else a for a in args))


class UserError(RmbError):
    """A mistake the user can fix."""


class DataError(UserError):
    """Invalid dataset or score file."""


class ConfigError(UserError):
    """Invalid configuration."""


class EndpointChanged(ConfigError):
    """The server behind a member endpoint's URL serves another model now (a restart, a rolling update): found by
    the identity check of a new connection, before that connection carried any request; the endpoint is taken out
    and its request goes elsewhere."""

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(problem)
        self.url = url


class RunLockedError(UserError):
    """Another run is writing into the same run directory."""


class StorageError(RmbError):
    """Writing the run directory failed (no space left, a read-only file system, SQLite's "database or disk is
    full"); the message names the directory, the file and the OS error."""

    @classmethod
    def of(cls, directory: Path, what: str, exc: BaseException, kind: str = "run directory") -> StorageError:
        """The error for `what` (a file of the directory, or what was done to it) failing with `exc` (an OSError,
        or SQLite's error), with the free space when the file system is (nearly) full."""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        try:
            free = shutil.disk_usage(directory).free
        except OSError:
            free = None
        full = f" ({free} bytes free on its file system)" if free is not None and free < LOW_SPACE_BYTES else ""
        return cls(f"{kind} {directory}: {what}: {reason}{full}")


class ServerError(RmbError):
    """A server failed to start, or to stop."""


class TrackerError(RmbError):
    """MLflow or Weights & Biases refused what a tracker logged; the run's own files are written already."""


class EndpointError(RmbError):
    """An endpoint answered with something unusable."""


class RetryableError(EndpointError):
    """A failure that another attempt may not repeat; `overloaded` (429) is load, not ill health."""

    def __init__(self, message: str, retry_after: float | None = None, overloaded: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.overloaded = overloaded


class PinBroken(RetryableError):
    """The endpoint a prompt's requests are kept on (client.same_endpoint_per_prompt) left the pool before the
    prompt was scored: nothing of it was stored, and it is scored again, whole, elsewhere."""


class SampleError(EndpointError):
    """A failure tied to the input itself; the sample is recorded as failed."""


class ShapeError(SampleError):
    """A server answer that does not have the documented shape; deterministic, so never retried."""


def located(message: str) -> tuple[str, str]:
    """A msgspec validation message as (dotted path, what): "Expected `int`, got `str` - at `$.data[0].id`" ->
    ("data.0.id", "Expected `int`, got `str`"); the path is "" at the top level. A missing or unknown field is named
    in the path (an unknown one as "unknown key"); a mapping's bad key ("at `key` in `$.roles`") is placed at its
    mapping."""
    found = re.search(r" - at `(?:key` in `)?\$\.?([^`]*)`$", message)
    what = message[: found.start()] if found else message
    parts = [re.sub(r"\[(\d+)\]", r".\1", found.group(1))] if found and found.group(1) else []
    named = re.fullmatch(r"Object (missing required|contains unknown) field `([^`]*)`", what)
    if named:
        parts.append(named.group(2))
        what = "unknown key" if named.group(1) == "contains unknown" else what
    return ".".join(parts), what
