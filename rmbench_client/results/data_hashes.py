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
