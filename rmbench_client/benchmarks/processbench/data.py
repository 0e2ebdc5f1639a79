"""ProcessBench (hub `Qwen/ProcessBench`: `gsm8k.json`, `math.json`, `olympiadbench.json`, `omnimath.json`, one split
each): competition-math solutions with the earliest wrong step marked by experts. Fields: `id` ("<split>-<n>"),
`generator`, `problem`, `steps` (a list of paragraphs), `final_answer_correct`, `label` (the 0-based index of the
earliest wrong step, -1 when every step is correct).

An Example's group is its split (the id's prefix); its `step_labels` are 1 for the steps before the wrong one and 0
for it (the steps after it are not labelled), or 1 for every step of a correct solution.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files
from .constants import SPLITS

REQUIRED = ("id", "problem", "steps", "label")


def split_of(rid: str, where: str) -> str:
    split = rid.rpartition("-")[0]
    if split not in SPLITS:
        raise DataError(f"{where}: id {rid!r} names none of ProcessBench's splits ({', '.join(SPLITS)})")
    return split


def labels_of(label: int, steps: int) -> tuple[int, ...]:
    """Per-step labels from the earliest wrong step's index (-1: none)."""
    return (1,) * steps if label == -1 else (1,) * label + (0,)


def earliest_wrong(labels: tuple[int, ...]) -> int:
    """The index of the earliest wrong step, -1 when none is: ProcessBench's `label` back from the step labels."""
    return labels.index(0) if 0 in labels else -1


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated ProcessBench solution, or a DataError naming file and record."""
    record, where = check.record(record, path, index, REQUIRED, hint=" (not a ProcessBench record)")
    rid = check.ident(record["id"], where)
    steps = check.strings(record["steps"], where, "steps")
    label = check.count(record["label"], where, "label")
    if not -1 <= label < len(steps):
        raise DataError(f"{where}: label {label} is no step of its {len(steps)} (0-based, or -1 for none)")
    extra = {k: record[k] for k in ("generator", "final_answer_correct") if k in record}
    return Example(
        id=rid,
        benchmark="processbench",
        group=split_of(rid, where),
        prompt=check.text(record["problem"], where, "problem"),
        chosen=(),
        rejected=(),
        steps=steps,
        step_labels=labels_of(label, len(steps)),
        extra=extra,
    )


files_in = data_files
