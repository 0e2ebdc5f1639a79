"""What every score-file module shares: reading numbers, naming result files, and writing JSON the way the
benchmarks' own tools write it."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import DataError


def floats(value: Any, where: str, key: str, finite: bool = True) -> tuple[float, ...]:
    """A number or a list of numbers (1-element lists unwrapped, as the benchmarks' scripts write them)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items:
        if isinstance(v, list) and len(v) == 1:
            v = v[0]
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise DataError(f"{where}: '{key}' must hold numbers, found {type(v).__name__}")
        if finite and not math.isfinite(v):
            raise DataError(f"{where}: '{key}' holds a non-finite score ({v})")
        out.append(float(v))
    if not out:
        raise DataError(f"{where}: '{key}' is empty")
    return tuple(out)


def text_field(rec: dict[str, Any], key: str, where: str) -> str:
    """A record's non-empty string (or integer) field, as a string."""
    value = rec.get(key)
    if not isinstance(value, str | int) or isinstance(value, bool) or value == "":
        raise DataError(f"{where}: '{key}' must be a non-empty string")
    return str(value)


def credit_value(value: Any, where: str) -> tuple[float, ...]:
    """A judge's credits: numbers in [0, 1]."""
    flat = [v for row in value for v in (row if isinstance(row, list) else [row])] if isinstance(value, list) else value
    results = floats(flat, where, "results")
    if any(not 0.0 <= v <= 1.0 for v in results):
        raise DataError(f"{where}: 'results' must hold credits in [0, 1]")
    return results


def json_id(rid: str) -> str | int:
    """reward-bench ids are integers: write "12" back as 12 (only when that reads back as the same string)."""
    return int(rid) if rid.isdigit() and str(int(rid)) == rid else rid


def model_path(root: Path, model: str) -> Path:
    """root/<model>.json; an org/name model id becomes a sub-directory, as reward-bench does."""
    parts = PurePosixPath(model).parts
    if not model or model.startswith("/") or any(p in ("..", ".") for p in parts) or "\\" in model:
        raise DataError(f"model name {model!r} cannot name a result file")
    path = root.joinpath(*parts[:-1], parts[-1] + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file
    return path


def hub_json(data: dict[str, Any] | Sequence[dict[str, Any]]) -> str:
    """reward-bench's `save_to_hub` text: an object as `json.dumps(indent=4, sort_keys=True)`, a list as those
    records one after another, each followed by a newline."""
    if isinstance(data, dict):
        return json.dumps(data, indent=4, sort_keys=True)
    return "".join(json.dumps(record, indent=4, sort_keys=True) + "\n" for record in data)


def to_columns(records: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """Records as `Dataset.to_dict()` gives them: one list per field (None where a record lacks it)."""
    keys = list(dict.fromkeys(k for r in records for k in r))
    return {k: [r.get(k) for r in records] for k in keys}
