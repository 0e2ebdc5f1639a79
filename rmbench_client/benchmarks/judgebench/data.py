"""JudgeBench (hub `ScalerLab/JudgeBench`, splits `gpt` and `claude`): pairs of responses to hard questions, one
correct and one not, as the hub's records hold them: `pair_id`, `original_id`, `source`, `question`,
`response_model`, `response_A`, `response_B`, `label` ("A>B" or "B>A").

The category is the source's family, as JudgeBench's paper groups them: MMLU-Pro subjects (`mmlu-pro-<subject>`)
are knowledge, `livebench-reasoning` reasoning, `livebench-math` math, `livecodebench` coding. The id is the pair's
`pair_id`; the chosen response is the one the label prefers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files

REQUIRED = ("pair_id", "source", "question", "response_A", "response_B", "label")
LABELS = {"A>B": ("response_A", "response_B"), "B>A": ("response_B", "response_A")}
SOURCES = (("mmlu-pro", "knowledge"), ("livebench-reasoning", "reasoning"), ("livebench-math", "math"),
           ("livecodebench", "coding"))  # fmt: skip


def category(source: str, where: str) -> str:
    for prefix, name in SOURCES:
        if source.startswith(prefix):
            return name
    raise DataError(f"{where}: source {source!r} is none of JudgeBench's (mmlu-pro-*, livebench-reasoning, "
                    "livebench-math, livecodebench)")  # fmt: skip


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated JudgeBench pair, or a DataError naming file and record."""
    record, where = check.record(record, path, index, REQUIRED)
    if record["label"] not in LABELS:
        raise DataError(f"{where}: label {record['label']!r} is neither 'A>B' nor 'B>A'")
    better, worse = LABELS[record["label"]]
    source = check.text(record["source"], where, "source")
    extra = {k: record[k] for k in ("original_id", "source", "response_model", "label") if k in record}
    return Example(
        id=check.ident(record["pair_id"], where),
        benchmark="judgebench",
        group=category(source, where),
        prompt=check.prompt(record["question"], where),
        chosen=(check.text(record[better], where, better),),
        rejected=(check.text(record[worse], where, worse),),
        extra=extra,
    )


files_in = data_files
