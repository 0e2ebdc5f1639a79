"""A run's output directory: one run at a time (a lock file), the outputs replaced together when a run ends, and
the file system's errors as one line naming the directory.

The lock is `filelock`'s (flock where there is one, so the kernel releases it when the process dies however it
ends); its file holds the pid of the run that took it, for the error a second run gets and for `status`.

The score store is the only state a rerun reads; everything else here is derived from it and rewritten at the end
of every run (also a stopped one). The earlier run's outputs stay while a run scores: its prompts' lines go to
`progress.jsonl` as they finish (`Progress`: what `status` counts), and when it ends its samples.jsonl,
failures.jsonl and summary.json are written in full beside the old ones and only then renamed over them
(`replace_outputs`); the old report page and the benchmark's own files then make way for the new. So a run that
cannot write its outputs (a full disk) leaves the earlier result whole, never half of one or neither, and a killed
run leaves it with its `progress.jsonl` beside it (`unfinished`). A run that cannot start changes nothing;
`--fresh` removes the store once the start-up checks have passed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..atomic_write import replacing
from ..atomic_write import write_atomic as write_atomic  # suite.py and report/page.py take it from here
from ..errors import ConfigError, RunLockedError, StorageError

if TYPE_CHECKING:
    from filelock import FileLock

STORE_FILES = (C.STORE_FILE, C.STORE_FILE + "-wal", C.STORE_FILE + "-shm")


@contextlib.contextmanager
def reporting(directory: Path, what: str, kind: str = "run directory") -> Iterator[None]:
    """An OSError in the block (no space left, a read-only file system) as a StorageError naming the directory
    (a `kind` of directory), `what` was being written and the OS error."""
    try:
        yield
    except OSError as exc:
        raise StorageError.of(directory, what, exc, kind) from None


def make_directory(path: Path, kind: str = "run directory") -> Path:
    """The directory, made with its parents where missing; one ConfigError naming it when it cannot be (an --out of
    /dev/null/x or /proc/x, a read-only parent)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{kind} {path} cannot be created: {exc.strerror or exc}") from None
    return path


class RunDirectory:
    """`with RunDirectory(path) as run_dir:` holds the directory's lock until the block ends (or the process dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: FileLock | None = None

    def __enter__(self) -> RunDirectory:
        from filelock import FileLock, Timeout  # imported when a lock is taken: `status` and `--help` need none

        make_directory(self.path)
        lock = FileLock(self.path / C.LOCK_FILE, thread_local=False, on_acquired=_write_pid)
        try:  # a moment's wait: `status` looking at the lock holds it that long
            lock.acquire(timeout=C.LOCK_PROBE_S)
        except Timeout:  # first: filelock's Timeout is an OSError too
            holder = _holder(self.path / C.LOCK_FILE) or "unknown"
            raise RunLockedError(
                f"{self.path}: another run (pid {holder}) is writing into this run directory; "
                "wait for it to end, or give this run another --out"
            ) from None
        except OSError as exc:  # a read-only file system, a directory this user cannot write
            raise ConfigError(f"run directory {self.path} cannot be written: {exc.strerror or exc}") from None
        self._lock = lock
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def begin(self, fresh: bool) -> Progress:
        """A run begins writing here (its start-up checks passed): with `fresh` the store goes; the progress file
        starts empty. The earlier outputs stay until `replace_outputs`."""
        with reporting(self.path, "starting the run"):
            for name in STORE_FILES if fresh else ():
                (self.path / name).unlink(missing_ok=True)
            return Progress(self.path / C.PROGRESS_FILE)

    def replace_outputs(self, files: Mapping[str, str | Iterable[str]], stale: Sequence[str] = ()) -> None:
        """Write every file in full beside its old version, then rename each over it (the last one named last: the
        summary), then remove the `stale` outputs (names or globs; a directory whole) that the new ones outdate. A
        write that fails (a full disk) leaves every old file as it was: StorageError naming the file."""
        # the renames happen as the stack unwinds, the first file entered (the last named) last; none when a write
        # failed, whose temporary files go
        with reporting(self.path, "renaming the outputs"), contextlib.ExitStack() as renames:
            for name in reversed(list(files)):
                with reporting(self.path, f"writing {name}"):
                    tmp = renames.enter_context(replacing(self.path / name))
                    with tmp.open("w", encoding="utf-8") as out:
                        text = files[name]
                        if isinstance(text, str):
                            out.write(text)
                        else:
                            out.writelines(text)
        with reporting(self.path, "removing outputs the new ones replace"):
            for pattern in stale:
                for path in self.path.glob(pattern):
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                    else:
                        path.unlink(missing_ok=True)

    def finish(self) -> None:
        """The run's outputs are written: its progress file goes."""
        (self.path / C.PROGRESS_FILE).unlink(missing_ok=True)

    def write_text(self, name: str, text: str | Iterable[str]) -> Path:
        """Write atomically: a reader sees the old file or the new one, never half of one."""
        with reporting(self.path, f"writing {name}"):
            return write_atomic(self.path / name, text)

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2) + "\n")


class Progress(io.StringIO):
    """The run's `progress.jsonl`: each prompt's line as it finishes (what `status` counts while a run scores). A
    write that fails (a full disk) is a StorageError naming the directory and the OS error."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._file = path.open("w", encoding="utf-8")

    def write(self, s: str) -> int:
        with reporting(self.path.parent, f"writing {self.path.name}"):
            return self._file.write(s)

    def flush(self) -> None:
        with reporting(self.path.parent, f"writing {self.path.name}"):
            self._file.flush()

    def close(self) -> None:
        # what a full disk kept out of it is in the store: the write that failed has said so already
        with contextlib.suppress(OSError):
            self._file.close()
        super().close()


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
        return _holder_pid(path)
    except OSError:  # a lock file this process cannot open to write (a read-only file system, another user's)
        return _probe_read_only(path)
    probe.release()
    return None


def _holder_pid(path: Path) -> int:
    holder = _holder(path)
    return int(holder) if holder.isdigit() else -1


def _probe_read_only(path: Path) -> int | None:
    """The lock's holder as `running_pid` says, probed through a descriptor opened to read: a shared flock is
    refused while a run holds the lock (None where there is no flock, or the file cannot be read)."""
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder_pid(path)
    except OSError:
        return None
    finally:
        os.close(fd)  # closing it releases the shared lock
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
    """Why a run directory holds no summary (still running, or ended without writing it: killed, the machine
    stopped, or its disk full); None when it holds one, or is no run directory."""
    if (run_dir / C.SUMMARY_FILE).is_file() or not (run_dir / C.CONFIG_FILE).is_file():
        return None
    if (pid := running_pid(run_dir)) is not None:
        return f"the run (pid {pid}) is still running: its summary is written when it ends"
    return ("the run ended without writing its summary (killed, the machine stopped, or its disk full): the same "
            "command resumes it")  # fmt: skip


def unfinished(run_dir: Path) -> str | None:
    """What a run that began here but never wrote its outputs left (its progress file, and no run holds the
    directory), said beside the earlier summary it left in place; None otherwise."""
    if not (run_dir / C.PROGRESS_FILE).is_file() or running_pid(run_dir) is not None:
        return None
    if not (run_dir / C.SUMMARY_FILE).is_file():
        return without_summary(run_dir)
    return (f"a later run ended without writing its outputs (killed, the machine stopped, or its disk full; "
            f"{C.PROGRESS_FILE} holds what it scored): {C.SUMMARY_FILE} is the earlier run's; the same command "
            "resumes the later one")  # fmt: skip
