"""A run's output directory: one run at a time (a lock file), no stale outputs beside a new run, atomic writes.

The lock is `filelock`'s (flock where there is one, so the kernel releases it when the process dies however it
ends); its file holds the pid of the run that took it, for the error a second run gets and for `status`.

The score store is the only state a rerun reads; everything else here is derived from it and rewritten at the end
of every run (also a stopped one). A run therefore clears the derived files once its start-up checks have passed
(`runner.RunFiles`), so that a crash never leaves an old summary beside new scores and a run that cannot start
deletes nothing; `--fresh` removes the store too.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import constants as C
from .atomic_write import write_atomic as write_atomic  # suite.py and report/page.py take it from here
from .errors import RunLockedError

if TYPE_CHECKING:
    from filelock import FileLock

DERIVED_FILES = (C.SUMMARY_FILE, C.SAMPLES_FILE, C.FAILURES_FILE, C.REPORT_FILE)
STORE_FILES = (C.STORE_FILE, C.STORE_FILE + "-wal", C.STORE_FILE + "-shm")


class RunDirectory:
    """`with RunDirectory(path) as run_dir:` holds the directory's lock until the block ends (or the process dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: FileLock | None = None

    def __enter__(self) -> RunDirectory:
        from filelock import FileLock, Timeout  # imported when a lock is taken: `status` and `--help` need none

        self.path.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.path / C.LOCK_FILE, thread_local=False, on_acquired=_write_pid)
        try:  # a moment's wait: `status` looking at the lock holds it that long
            lock.acquire(timeout=C.LOCK_PROBE_S)
        except Timeout:
            holder = _holder(self.path / C.LOCK_FILE) or "unknown"
            raise RunLockedError(
                f"{self.path}: another run (pid {holder}) is writing into this run directory; "
                "wait for it to end, or give this run another --out"
            ) from None
        self._lock = lock
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.release()
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
    path = run_dir / C.LOCK_FILE
    if not path.is_file():
        return None
    from filelock import FileLock, Timeout

    probe = FileLock(path, thread_local=False)
    try:  # a moment's wait: another `status` may be looking at it too
        probe.acquire(timeout=C.LOCK_PROBE_S)
    except Timeout:
        holder = _holder(path)
        return int(holder) if holder.isdigit() else -1
    probe.release()
    return None


def _write_pid(fd: int) -> None:
    """The holder's pid into the lock file, written once the lock is held (filelock leaves its content alone)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)


def _holder(path: Path) -> str:
    """What the lock file says about its holder ("" when it cannot be read: a lock that blocks reading)."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def without_summary(run_dir: Path) -> str | None:
    """Why a run directory holds no summary (still running, or ended without writing it: killed, or the machine
    stopped); None when it holds one, or is no run directory."""
    if (run_dir / C.SUMMARY_FILE).is_file() or not (run_dir / C.CONFIG_FILE).is_file():
        return None
    if (pid := running_pid(run_dir)) is not None:
        return f"the run (pid {pid}) is still running: its summary is written when it ends"
    return "the run ended without writing its summary (killed, or the machine stopped): the same command resumes it"
