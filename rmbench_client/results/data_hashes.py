"""Content hashes of the data a run scored: per data file and per prompt, recorded in `summary.json`.

They let `compare` pair only prompts that are the same texts in every run (comparison.py: two files numbered by
index share ids, not prompts) and let `report` refuse texts that are not the ones scored. A prompt's hash covers
what determines its scores: the prompt, its responses in order, its group (the domain or subset it is scored in),
where a benchmark scores only some comparisons which, and a process benchmark's steps with their labels.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import constants as C
from .. import json_text
from ..examples import Example


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
    if ex.facets:  # what its numbers are broken down by (IF-RewardBench's responding model, turn, constraints)
        material.append([list(f) for f in ex.facets])
    # the compact standard-library text, as ever (orjson writes it: a quarter of the CPU), so hashes stay comparable
    return hashlib.sha256(json_text.compact(material)).hexdigest()[: C.PROMPT_HASH_CHARS]


def prompt_hashes(examples: Iterable[Example]) -> dict[str, str]:
    return {ex.id: prompt_hash(ex) for ex in examples}


def changed_files(recorded: dict[str, str], found: Iterable[Path]) -> list[str]:
    """What differs between the files a run recorded (path -> sha256) and those found now, matched by content (the
    same data may lie elsewhere): each file found whose content the run never scored, each recorded content not
    found; empty when the data is the same."""
    hashes = {str(path): file_sha256(path) for path in found}
    kept = set(recorded.values())
    problems = []
    for path, digest in hashes.items():
        if digest in kept:
            continue
        if path in recorded:
            problems.append(f"{path}: changed since the run (sha256 {digest[:12]}… now, {recorded[path][:12]}… then)")
        else:
            problems.append(f"{path}: not data the run scored (its sha256 {digest[:12]}… is none of the run's files')")
    now = set(hashes.values())
    problems += [f"{path} (sha256 {digest[:12]}…): scored by the run, not found in the data now"
                 for path, digest in recorded.items() if digest not in now and path not in hashes]  # fmt: skip
    return problems


def changed_prompts(recorded: dict[str, str], examples: Iterable[Example]) -> list[str]:
    """The ids of the prompts whose content differs from what the run recorded (or that it never scored)."""
    return [ex.id for ex in examples if recorded.get(ex.id) != prompt_hash(ex)]
