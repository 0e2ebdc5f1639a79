"""Writing a file so that a reader sees the old one or the new one, never half of one: the new content goes into a
temporary file beside it (`<name>.tmp`), which is then renamed over it. Imports nothing of the package, so the
benchmarks and the machinery both use it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """The temporary path to write `path`'s new content to (in any way: text, a figure); renamed over `path` when
    the block ends, removed when it fails. The directory is made if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        yield tmp
        tmp.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_atomic(path: Path, text: str | bytes | Iterable[str]) -> Path:
    """`text` (or its pieces, written one after another: a large file is never held whole) into `path`, UTF-8;
    bytes as they are (already UTF-8)."""
    with replacing(path) as tmp:
        if isinstance(text, bytes):
            tmp.write_bytes(text)
            return path
        with tmp.open("w", encoding="utf-8") as out:
            if isinstance(text, str):
                out.write(text)
            else:
                out.writelines(text)
    return path
