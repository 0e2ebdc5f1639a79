"""RewardBench 2 (`allenai/reward-bench-2`, split `test`) from parquet, JSON or JSONL, validated into Examples.

Fields: id, prompt, chosen (the correct answers), rejected (the incorrect ones), num_correct, num_incorrect,
total_completions, models, subset. An Example's `chosen` are the correct answers and `rejected` the incorrect
ones, so the first `num_correct` of chosen + rejected are the correct ones, as reward-bench reads them.

Ties ids are `ref:N` (one correct answer) or `tied:N` (several); reward-bench's Ties score needs every tied
prompt to have at least two correct answers (it fails with a TypeError otherwise), so such a record is a
DataError here. Other subsets are scored with the first correct answer against all the rest, as reward-bench
does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files
from .constants import SUBSETS, TIES

FIELDS = ("id", "prompt", "chosen", "rejected", "num_correct", "num_incorrect", "total_completions", "subset")
TIES_ID = re.compile(r"^(ref|tied):(\d+)$")


def ties_id(rid: str, where: str) -> tuple[str, int]:
    """('ref' | 'tied', N) of a Ties id, or a DataError."""
    m = TIES_ID.match(rid)
    if not m:
        raise DataError(f"{where}: a Ties id must be 'ref:N' or 'tied:N', got {rid!r}")
    return m.group(1), int(m.group(2))


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated RewardBench 2 example, or a DataError naming file and record."""
    record, where = check.record(record, path, index, FIELDS)
    subset = record["subset"]
    if subset not in SUBSETS:
        raise DataError(f"{where}: unknown subset {subset!r} (known: {', '.join(SUBSETS)})")
    rid = check.ident(record["id"], where)
    chosen = check.texts(record["chosen"], where, "chosen")
    rejected = check.texts(record["rejected"], where, "rejected")
    counts = {k: check.count(record[k], where, k) for k in ("num_correct", "num_incorrect", "total_completions")}
    expected = {"num_correct": len(chosen), "num_incorrect": len(rejected)}
    expected["total_completions"] = len(chosen) + len(rejected)
    for key, value in expected.items():
        if counts[key] != value:
            raise DataError(f"{where}: '{key}' is {counts[key]} but the record holds {value}")
    if subset == TIES:
        kind, _ = ties_id(rid, where)
        if kind == "tied" and len(chosen) < 2:
            raise DataError(f"{where}: a tied Ties prompt needs at least 2 correct answers, has {len(chosen)}")
    models = record.get("models")
    if models is not None and not isinstance(models, list):
        raise DataError(f"{where}: 'models' must be a list, got {type(models).__name__}")
    return Example(
        id=rid,
        benchmark="reward-bench-2",
        group=subset,
        prompt=check.prompt(record["prompt"], where),
        chosen=chosen,
        rejected=rejected,
        extra={"models": models} if models is not None else {},
    )


files_in = data_files
