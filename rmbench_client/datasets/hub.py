"""Downloading a benchmark's files from the Hugging Face hub: into the cache for a run without local data, or
into data/<benchmark>/ for `rmbench-client data fetch` (checked against the known checksums)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..errors import DataError

if TYPE_CHECKING:
    from ..benchmarks.spec import Benchmark, HubSource


def run_hint(bench: Benchmark[Any]) -> str:
    """What a run without the benchmark's data can do instead (the variable only for the benchmark it serves)."""
    env = f" or ${bench.data_env}" if bench.data_env else ""
    return (
        f"point at a local copy with --data PATH{env} ({bench.layout}), or fill {C.DATA_FOLDER}/{bench.name} with "
        f"`rmbench-client data fetch {bench.name}` once the hub is reachable"
    )


def _fetch_hint(bench: Benchmark[Any], dest: Path) -> str:
    return f"check the network (HF_ENDPOINT, HF_HUB_OFFLINE), or put {bench.layout} into {dest} yourself"


def _snapshot(
    bench: Benchmark[Any], source: HubSource, hint: str, cache_dir: str | None = None, local_dir: str | None = None
) -> list[Path]:
    """The source's files, by snapshot_download (into the cache, or `local_dir`); one DataError on failure. Only
    the files the patterns name: a cached snapshot may hold other splits that other tools downloaded."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - huggingface_hub is a dependency
        raise DataError(f"no local {bench.name} data and huggingface_hub is not installed; {hint}") from None
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
        raise DataError(f"cannot download {source.repo} from the Hugging Face hub ({reason[:160]}); {hint}") from None
    files = sorted({f for pattern in source.patterns for f in Path(local).glob(pattern) if f.is_file()})
    if not files:
        raise DataError(f"the hub dataset {source.repo} holds no file matching {', '.join(source.patterns)}")
    return files


def download(bench: Benchmark[Any]) -> list[Path]:
    """The benchmark's files, downloaded once into the cache."""
    if not bench.hub:
        raise DataError(f"{bench.name} has no hub dataset: pass the data with --data PATH ({bench.layout})")
    cache = os.environ.get(C.CACHE_DIR_ENV)
    return [f for s in bench.hub for f in _snapshot(bench, s, run_hint(bench), cache_dir=cache)]


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


def known_checksum(bench: Benchmark[Any], name: str) -> str | None:
    return bench.checksums.get(name)


def fetch(bench: Benchmark[Any], dest: Path) -> list[tuple[Path, bool]]:
    """Download the benchmark's hub files into `dest` (each file under its own name, in the source's folder),
    checking known checksums before a file is moved in; (path, verified) per file. A failed fetch leaves no folder
    it created empty."""
    if not bench.hub:
        raise DataError(f"{bench.name} has no hub dataset: nothing to fetch; put {bench.layout} into {dest}")
    created = [d for d in (dest, *dest.parents) if not d.exists()]  # deepest first
    dest.mkdir(parents=True, exist_ok=True)
    out: list[tuple[Path, bool]] = []
    try:
        with tempfile.TemporaryDirectory(dir=dest, prefix=".fetch-") as staging:
            for i, source in enumerate(bench.hub):
                for f in _snapshot(bench, source, _fetch_hint(bench, dest), local_dir=str(Path(staging) / str(i))):
                    expected = known_checksum(bench, f.name)
                    if expected is not None:
                        verify(f, expected)
                    target = dest / source.folder / f.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(f), target)
                    out.append((target, expected is not None))
    except BaseException:
        for d in created:
            with contextlib.suppress(OSError):  # a folder that holds something stays
                d.rmdir()
        raise
    return out
