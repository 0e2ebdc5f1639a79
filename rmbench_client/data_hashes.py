"""Content hashes of the data a run scored: per data file and per prompt, recorded in `summary.json`.

They let `compare` pair only prompts that are the same texts in every run (two files numbered by index share ids,
not prompts) and let `report` refuse texts that are not the ones scored. A prompt's hash covers what determines
its scores: the prompt, its responses in order, its group (the domain or subset it is scored in), where a
benchmark scores only some comparisons which, and a process benchmark's steps with their labels.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import constants as C
from .examples import Example


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def prompt_hash(ex: Example) -> str:
    material: list[Any] = [ex.group, ex.prompt, list(ex.chosen), list(ex.rejected)]
    if ex.pairs is not None:  # which comparisons are scored (PPE Correctness)
        material.append([list(p) for p in ex.pairs])
    if ex.steps:  # a process benchmark's solution: its steps and their labels
        material.append([list(ex.steps), list(ex.step_labels)])
    blob = json.dumps(material, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[: C.PROMPT_HASH_CHARS]


def prompt_hashes(examples: Iterable[Example]) -> dict[str, str]:
    return {ex.id: prompt_hash(ex) for ex in examples}


def recorded(summary: dict) -> dict[str, str] | None:
    """A run's per-prompt hashes, or None for a run written before they were recorded."""
    hashes = summary.get("data", {}).get("prompt_sha256")
    return hashes if isinstance(hashes, dict) else None


def same_prompts(runs: list[tuple[str, dict]], ids: set[str]) -> tuple[set[str], list[str]]:
    """The ids among `ids` whose texts are the same in every run, and notes on what was left out and why."""
    hashes = [(name, recorded(summary)) for name, summary in runs]
    unknown = [name for name, h in hashes if h is None]
    if unknown:
        note = f"{', '.join(unknown)}: no data hashes in the summary (an older run); prompts are paired by id unchecked"
        return ids, [note]
    known = [h for _, h in hashes if h is not None]
    same = {i for i in ids if len({h.get(i) for h in known}) == 1 and known[0].get(i) is not None}
    if len(same) == len(ids):
        return same, []
    differ = len(ids) - len(same)
    files = sorted({f for _, s in runs for f in s.get("data", {}).get("sha256", {}).items()})
    what = "the runs scored different data" if len({f for f, _ in files}) > 1 or differ == len(ids) else ""
    note = f"{differ} prompt(s) with the same id differ in content between the runs; left out of the paired test"
    return same, [f"{note} ({what})" if what else note]
