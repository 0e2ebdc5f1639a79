"""Your own preference data: any JSONL/JSON/parquet file of `prompt`, `chosen`, `rejected`, optional `id` and
`subset`, validated into Examples.

The prompt is a string or a conversation (a list of {"role", "content"} messages ending with a user turn);
`chosen` and `rejected` are strings. A record without `subset` is in subset "default"; one without `id` is
numbered by its index in the file (so files of one directory without ids collide: give them ids). Other
field names are mapped through the config's `data_fields`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files
from .constants import DEFAULT_SUBSET


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated preference pair, or a DataError naming file and record."""
    hint = " (map other names with data_fields)"
    record, where = check.record(record, path, index, ("prompt", "chosen", "rejected"), hint)
    subset = record.get("subset")
    if subset is None:  # absent or null: the default subset, as the docs say
        subset = DEFAULT_SUBSET
    if not isinstance(subset, str) or not subset.strip():
        raise DataError(f"{where}: 'subset' must be a non-empty string")
    rid = check.ident(record["id"], where) if record.get("id") is not None else str(index)
    extra = {k: v for k, v in record.items() if k not in ("id", "prompt", "chosen", "rejected", "subset")}
    return Example(
        id=rid,
        benchmark="pairwise",
        group=subset,
        prompt=check.prompt(record["prompt"], where),
        chosen=(check.text(record["chosen"], where, "chosen"),),
        rejected=(check.text(record["rejected"], where, "rejected"),),
        extra=extra,
    )


files_in = data_files
