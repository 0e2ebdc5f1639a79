"""PRMBench (`ssmisya/PRMBench`, `mr_eval/tasks/prmtest_classified/data/*.jsonl`, commit a1ae4ea): solutions with
injected errors, one JSON line each: `idx`, `classification` (the error class, or `multi_solutions`),
`modified_question`, `modified_process` (the steps), `error_steps` (1-based), `reason`, and the original question
and process they were made from.

What is scored, as PRMBench's loader (`mr_eval/tasks/prmtest_classified/task.py`, `load_data_function`) builds it:
the id `<classification>_<idx>`, the question `modified_question`, the steps `modified_process` with their
"Step N." / "N." prefixes removed (`mr_eval/utils/model_utils.py`, `remove_step_prefix`: every PRM of mr_eval feeds
the steps so); step i is erroneous when i + 1 is in `error_steps`.

Quirks of the published files, and what is done about each:
- an error step past the last step (100 records; in 16 of them every error step is): it names no step, so no step
  is marked erroneous for it, as PRMBench's evaluation, which only visits the steps a model scored, never reaches
  it; `data_notes` counts these records in every summary;
- a repeated id (5 in the multi-solution file, each a different solution): the first is scored, the later ones
  are left out, as PRMBench's loader skips an id it has seen (`filter_dict`); the summary names them;
- PRMBench's loader also adds each `redundency` record's original solution as an error-free "correct" sample; its
  numbers are on no leaderboard column and outside the overall number, so those solutions are not scored here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from .constants import CLASSES

REQUIRED = ("idx", "classification", "modified_question", "modified_process", "error_steps")
_PREFIX = re.compile(r"^(Step\s*\d+\.\s*|\d+\.\s*)", re.IGNORECASE)  # remove_step_prefix's pattern


def files_in(directory: Path) -> list[Path]:
    """The JSON-lines files of the folder itself (the repository's `data/debug/` is not part of the benchmark)."""
    return sorted(p for p in directory.glob("*.jsonl") if p.is_file())


def remove_step_prefix(text: str) -> str:
    """A step without its "Step N." or "N." prefix and surrounding whitespace, as mr_eval's models send it."""
    return _PREFIX.sub("", text.strip())


def _error_steps(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        raise DataError(f"{where}: 'error_steps' must be a list of step numbers (1-based)")
    return list(value)


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated PRMBench solution, or a DataError naming file and record."""
    record, where = check.record(record, path, index, REQUIRED, hint=" (not a PRMBench record)")
    classification = record["classification"]
    if classification not in CLASSES:
        raise DataError(f"{where}: classification {classification!r} is none of PRMBench's "
                        f"({', '.join(CLASSES)})")  # fmt: skip
    steps = tuple(map(remove_step_prefix, check.strings(record["modified_process"], where, "modified_process")))
    errors = _error_steps(record["error_steps"], where)
    past_end = [e for e in errors if not 1 <= e <= len(steps)]
    return Example(
        id=f"{classification}_{check.ident(record['idx'], where, 'idx')}",
        benchmark="prmbench",
        group=classification,
        prompt=check.text(record["modified_question"], where, "modified_question"),
        chosen=(),
        rejected=(),
        steps=steps,
        step_labels=tuple(0 if i + 1 in errors else 1 for i in range(len(steps))),
        extra={"error_steps": errors, "past_end": past_end, "reason": record.get("reason", "")},
    )


def data_notes(examples: Sequence[Example]) -> list[str]:
    """What the summary says about the data: records naming an error step past their last step."""
    past = [ex for ex in examples if ex.extra.get("past_end")]
    if not past:
        return []
    none_left = sum(0 not in ex.step_labels and bool(ex.extra.get("error_steps")) for ex in past)
    return [
        f"{len(past)} solution(s) name an error step past their last step ({none_left} of them only such steps): "
        "no step is marked erroneous for it, as PRMBench's evaluation never reaches it"
    ]
