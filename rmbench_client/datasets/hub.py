"""Downloading a benchmark's files from the Hugging Face hub: into the cache for a run without local data, or
into data/<benchmark>/ for `rmbench-client data fetch` (checked against the known checksums)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import constants as C
from ..errors import DataError

if TYPE_CHECKING:
    from ..benchmarks import HubSource

_HINT = (
    f"point at a local copy with --data PATH or the environment variable {C.DATA_DIR_ENV} "
    "(a directory of RM-Bench *_filtered.json files or total_dataset.json; a RewardBench parquet/JSON/JSONL file), "
    "or fill data/ with `rmbench-client data fetch`"
)


def _snapshot(
    benchmark: str, source: HubSource, cache_dir: str | None = None, local_dir: str | None = None
) -> list[Path]:
    """The source's files, by snapshot_download (into the cache, or `local_dir`); one DataError on failure. Only
    the files the patterns name: a cached snapshot may hold other splits that other tools downloaded."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - huggingface_hub is a dependency
        raise DataError(f"no local {benchmark} data and huggingface_hub is not installed; {_HINT}") from None
    try:
        local = snapshot_download(
            repo_id=source.repo,
            repo_type="dataset",
            allow_patterns=list(source.patterns),
            cache_dir=cache_dir,
            local_dir=local_dir,
        )
    except Exception as exc:  # offline, DNS, HTTP errors, gated repo: all end the same way for the user
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"cannot download {source.repo} from the Hugging Face hub ({reason[:160]}); {_HINT}") from None
    files = sorted({f for pattern in source.patterns for f in Path(local).glob(pattern) if f.is_file()})
    if not files:
        raise DataError(f"the hub dataset {source.repo} holds no file matching {', '.join(source.patterns)}")
    return files


def download(benchmark: str, sources: Sequence[HubSource]) -> list[Path]:
    """The benchmark's files, downloaded once into the cache."""
    if not sources:
        raise DataError(f"{benchmark} has no hub dataset: pass the data with --data PATH")
    return [f for s in sources for f in _snapshot(benchmark, s, cache_dir=os.environ.get(C.CACHE_DIR_ENV))]


def checksum(path: Path, kind: str) -> str:
    """The file's "sha256" or "git-sha1" (`git hash-object`: sha1 of "blob <size>\\0" and the bytes)."""
    if kind == "sha256":
        digest = hashlib.sha256()
    elif kind == "git-sha1":
        digest = hashlib.sha1()  # git's object id, not a security hash
        digest.update(f"blob {path.stat().st_size}\0".encode())
    else:
        raise DataError(f"unknown checksum kind {kind!r}")
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, expected: str) -> None:
    """DataError naming the file when its checksum ("<kind>:<hex>") differs."""
    kind, _, want = expected.partition(":")
    got = checksum(path, kind)
    if got != want:
        raise DataError(f"{path}: {kind} checksum {got} does not match the known {want}; the file was not kept")


def known_checksum(benchmark: str, name: str) -> str | None:
    return C.DATA_CHECKSUMS.get(benchmark, {}).get(name)


def fetch(benchmark: str, sources: Sequence[HubSource], dest: Path) -> list[tuple[Path, bool]]:
    """Download the benchmark's hub files into `dest` (each file under its own name, in the source's folder),
    checking known checksums before a file is moved in; (path, verified) per file."""
    if not sources:
        raise DataError(
            f"{benchmark} has no hub dataset: nothing to fetch (data/README.md says where its data comes from)"
        )
    dest.mkdir(parents=True, exist_ok=True)
    out: list[tuple[Path, bool]] = []
    with tempfile.TemporaryDirectory(dir=dest, prefix=".fetch-") as staging:
        for i, source in enumerate(sources):
            for f in _snapshot(benchmark, source, local_dir=str(Path(staging) / str(i))):
                expected = known_checksum(benchmark, f.name)
                if expected is not None:
                    verify(f, expected)
                target = dest / source.folder / f.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(f), target)
                out.append((target, expected is not None))
    return out
