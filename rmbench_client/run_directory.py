"""A run's output directory: one run at a time (a lock file), no stale outputs beside a new run, atomic writes.

The score store is the only state a rerun reads; everything else here is derived from it and rewritten at the end
of every run (also a stopped one). A run therefore clears the derived files once its start-up checks have passed
(`runner.RunFiles`), so that a crash never leaves an old summary beside new scores and a run that cannot start
deletes nothing; `--fresh` removes the store too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from . import constants as C
from .errors import RunLockedError

DERIVED_FILES = (C.SUMMARY_FILE, C.SAMPLES_FILE, C.FAILURES_FILE, C.REPORT_FILE)
STORE_FILES = (C.STORE_FILE, C.STORE_FILE + "-wal", C.STORE_FILE + "-shm")


class RunDirectory:
    """`with RunDirectory(path) as run_dir:` holds the directory's lock until the block ends (or the process dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: IO[str] | None = None

    def __enter__(self) -> RunDirectory:
        self.path.mkdir(parents=True, exist_ok=True)
        lock = open(self.path / C.LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115 - held for the whole run
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            lock.close()
            raise RunLockedError(
                f"{self.path}: another run (pid {holder}) is writing into this run directory; "
                "wait for it to end, or give this run another --out"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        self._lock = lock
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.close()  # closing releases the lock
            self._lock = None

    def clear(self, fresh: bool, own: Sequence[str] = ()) -> None:
        """Remove every derived output, the benchmark's `own` files (names or globs; a directory whole) among them,
        and with `fresh` the score store: they are rewritten by this run."""
        names = [*DERIVED_FILES, *(STORE_FILES if fresh else ())]
        for name in names:
            (self.path / name).unlink(missing_ok=True)
        for pattern in own:
            for path in self.path.glob(pattern):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)

    def write_text(self, name: str, text: str | Iterable[str]) -> Path:
        """Write atomically: a reader sees the old file or the new one, never half of one."""
        return write_atomic(self.path / name, text)

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2) + "\n")


def running_pid(run_dir: Path) -> int | None:
    """The pid of the run holding the directory's lock (-1 when it wrote none), or None."""
    lock = run_dir / C.LOCK_FILE
    if not lock.is_file():
        return None
    with open(lock, encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = f.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(f, fcntl.LOCK_UN)
    return None


def without_summary(run_dir: Path) -> str | None:
    """Why a run directory holds no summary (still running, or ended without writing it: killed, or the machine
    stopped); None when it holds one, or is no run directory."""
    if (run_dir / C.SUMMARY_FILE).is_file() or not (run_dir / C.CONFIG_FILE).is_file():
        return None
    if (pid := running_pid(run_dir)) is not None:
        return f"the run (pid {pid}) is still running: its summary is written when it ends"
    return "the run ended without writing its summary (killed, or the machine stopped): the same command resumes it"


def write_atomic(path: Path, text: str | Iterable[str]) -> Path:
    """`text` (or its pieces, written one after another: a large file is never held whole) into `path` through a
    temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            if isinstance(text, str):
                out.write(text)
            else:
                out.writelines(text)
        tmp.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return path
