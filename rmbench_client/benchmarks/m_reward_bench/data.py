"""M-RewardBench's data: the hub dataset's configs, one per language (`<language>/test-00000-of-00001.parquet`), each
record `id` (int64), `language`, `prompt`, `chosen`, `rejected`, `chosen_model`, `rejected_model`, `source` (the
RewardBench subset) and `category` (strings). A record's language is its config's (the folder it is in) where that
is one of the 23, else its `language` field; its group is `<language>/<source>`, its id `<language>:<id>` (each
language holds the same ids). The `translation` config, a category the language scores do not count, is not read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files
from ..shared.rewardbench_sections import SECTIONS
from .constants import LANGUAGES, NAME, NOT_AVERAGED

SUBSETS = tuple(s for subsets in SECTIONS.values() for s in subsets)


def language_of(record: dict[str, Any], path: Path, where: str) -> str:
    """The record's language: its config's folder, else its `language` field."""
    if path.parent.name in (*LANGUAGES, *NOT_AVERAGED):
        return path.parent.name
    return check.text(record.get("language"), where, "language")


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One pair of a language, or a DataError naming the file and record."""
    record, where = check.record(record, path, index, ("id", "prompt", "chosen", "rejected", "source"))
    language = language_of(record, path, where)
    subset = check.choice(record["source"], where, "source", SUBSETS)
    return Example(
        id=f"{language}:{check.ident(record['id'], where)}",
        benchmark=NAME,
        group=f"{language}/{subset}",
        prompt=check.prompt(record["prompt"], where),
        chosen=(check.string(record["chosen"], where, "chosen"),),
        rejected=(check.string(record["rejected"], where, "rejected"),),
    )


def files_in(directory: Path) -> list[Path]:
    """The parquet, JSON and JSONL files of a directory and its language folders (not the translation config)."""
    return [f for f in data_files(directory, nested=True) if f.parent.name != "translation"]
