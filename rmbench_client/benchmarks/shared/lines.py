"""What every score-file module shares: reading numbers, naming result files, and writing JSON the way the
benchmarks' own tools write it."""

from __future__ import annotations

import math
from typing import Any

from ...atomic_write import write_atomic
from ...errors import DataError

write_text = write_atomic  # the name the benchmarks' file writers use


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
