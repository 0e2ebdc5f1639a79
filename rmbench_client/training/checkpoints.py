"""Which checkpoints of a training run are complete, and their steps.

A checkpoint is a directory directly under the watched one. It is complete once:
- `config.json` is there, and weights: `*.safetensors` files, every shard a `*.safetensors.index.json` names;
- every safetensors file is whole: its size is what its own header says (8 bytes, the JSON header, then the data
  up to the last tensor's end), so a file still being written never passes;
- no temporary file is in it (`*.tmp`, `*.partial`, `*.incomplete`, or a name starting with `.` or `tmp`);
- nothing in it changed for `settle` seconds (the tokenizer files a trainer writes after the weights).

Its step is the last number in its name (`checkpoint-500`, `step_1000`, `global_step12`); one without a number
comes after those that have one, by name.
"""

from __future__ import annotations

import contextlib
import json
import re
import struct
import time
from dataclasses import dataclass
from pathlib import Path

TEMPORARY = re.compile(r"(^\.|^tmp|\.tmp$|\.partial$|\.incomplete$)")
CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: its directory, name and step (None when its name holds no number)."""

    path: Path
    name: str
    step: int | None


def step_of(name: str) -> int | None:
    """The last number in a checkpoint's name."""
    found = re.findall(r"\d+", name)
    return int(found[-1]) if found else None


def whole_safetensors(path: Path) -> bool:
    """The file is as long as its header says (a file cut short, or still being written, is not)."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return False
            (length,) = struct.unpack("<Q", head)
            header = json.loads(f.read(length))
        size = path.stat().st_size
    except (OSError, ValueError, struct.error):
        return False
    ends = [int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)]
    return bool(size == 8 + int(length) + max(ends, default=0))


def _shards(folder: Path) -> set[str]:
    names: set[str] = set()
    for index in folder.glob("*.safetensors.index.json"):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            names |= set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
    return names


def is_complete(folder: Path, settle: float, now: float | None = None) -> bool:
    """Whether `folder` is a complete checkpoint (the rules in the module docstring)."""
    try:
        files = [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return False
    names = {p.name for p in files}
    weights = [p for p in files if p.name.endswith(".safetensors")]
    if CONFIG_FILE not in names or not weights or any(TEMPORARY.search(n) for n in names):
        return False
    if not _shards(folder) <= names or not all(whole_safetensors(p) for p in weights):
        return False
    try:
        newest = max(p.stat().st_mtime for p in [folder, *files])
    except OSError:
        return False
    return (now if now is not None else time.time()) - newest >= settle


def complete_checkpoints(directory: Path, settle: float) -> list[Checkpoint]:
    """The complete checkpoints under `directory`, by step."""
    found = [
        Checkpoint(p, p.name, step_of(p.name))
        for p in sorted(directory.iterdir())
        if p.is_dir() and not TEMPORARY.search(p.name) and is_complete(p, settle)
    ]
    return sorted(found, key=lambda c: (c.step is None, c.step or 0, c.name))
