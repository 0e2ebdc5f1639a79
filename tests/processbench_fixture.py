"""ProcessBench test files in the hub's exact layout and schema (`Qwen/ProcessBench`: one JSON file per split,
`gsm8k.json`, `math.json`, `olympiadbench.json`, `omnimath.json`; records id (string, "<split>-<n>"), generator,
problem (strings), steps (list of strings), final_answer_correct (bool), label (int, -1 for none)); and the same
records as parquet with the types `datasets` gives them. Nothing is downloaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from hub_schemas import write_parquet

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("generator", pa.string()),
        ("problem", pa.string()),
        ("steps", pa.list_(pa.string())),
        ("final_answer_correct", pa.bool_()),
        ("label", pa.int64()),
    ]
)


def record(split: str, n: int, steps: int, label: int) -> dict[str, Any]:
    return {
        "id": f"{split}-{n}",
        "generator": "Qwen2-7B-Instruct",
        "problem": f"Problem {n} of {split}: what is {n} + {steps}?",
        "steps": [f"Step text {k} of {split}-{n}." for k in range(steps)],
        "final_answer_correct": label == -1,
        "label": label,
    }


def split_records(split: str, count: int) -> list[dict[str, Any]]:
    """`count` solutions of 2 to 6 steps; every third one correct, the others wrong at a step that varies."""
    out = []
    for n in range(count):
        steps = 2 + n % 5
        out.append(record(split, n, steps, -1 if n % 3 == 0 else n % steps))
    return out


def write_processbench(root: Path, count: int = 12, parquet: bool = False) -> Path:
    """The four splits' files in root (JSON as the hub stores them, or parquet)."""
    root.mkdir(parents=True, exist_ok=True)
    for split in ("gsm8k", "math", "olympiadbench", "omnimath"):
        records = split_records(split, count)
        if parquet:
            write_parquet(root / f"{split}.parquet", records, SCHEMA)
        else:
            (root / f"{split}.json").write_text(json.dumps(records, indent=2), encoding="utf-8")
    return root
