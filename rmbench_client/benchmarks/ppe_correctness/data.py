"""PPE Correctness (hub `lmarena-ai/PPE-<set>-Best-of-K`, split `train`, for the sets MMLU-Pro, MATH, GPQA,
IFEval and MBPP-Plus): per row one prompt, one generating model and its K = 32 sampled answers with verified
correctness, as the hub's records hold them: `question_id`, `model_name`, `prompt`, `response_1` ...
`response_32`, `scores` (K booleans: `scores[i]` is the correctness of `response_{i+1}`), `conflict_pairs` and
`sampled_conflict_pairs` (lists of [i, j] 0-based indices of one correct and one incorrect answer), and each set's
own fields, by which a record's set is told (`answer_index` MMLU-Pro, `level` MATH, `correct_choice_index` GPQA,
`instruction_id_list` IFEval, `test_list` MBPP-Plus; PPE_SET_KEYS).

An Example's chosen answers are the correct ones and its rejected the incorrect ones, each in response order; its
`pairs` are the `sampled_conflict_pairs` as (chosen index, rejected index), the comparisons PPE scores (and the
only ones a pairwise judge is asked). The group is the set; the id is `<set>:<question_id>:<model_name>` (a
question is answered by four models). A row whose answers are all correct or all wrong has no pair; it counts
in best-of-K. Answers are scored as they are, blank ones too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files
from .constants import SET_KEYS

REQUIRED = ("question_id", "prompt", "scores", "sampled_conflict_pairs")
_RESPONSE = re.compile(r"response_([1-9][0-9]*)")


def files_in(directory: Path) -> list[Path]:
    """Every parquet/JSON/JSONL file under the directory (`data fetch` puts each set in a folder of its own)."""
    return data_files(directory, nested=True)


def set_of(record: dict[str, Any], where: str) -> str:
    for name, key in SET_KEYS.items():
        if key in record:
            return name
    keys = ", ".join(f"'{k}' ({n})" for n, k in SET_KEYS.items())
    raise DataError(f"{where}: none of the fields that name a PPE correctness set: {keys}")


def _labels(value: Any, where: str) -> tuple[bool, ...]:
    if not isinstance(value, list | tuple) or not value or not all(isinstance(v, bool) for v in value):
        raise DataError(f"{where}: 'scores' must be a non-empty list of booleans (each answer's correctness)")
    return tuple(value)


def _responses(record: dict[str, Any], k: int, where: str) -> list[str]:
    numbers = sorted(int(m.group(1)) for key in record if (m := _RESPONSE.fullmatch(key)))
    if numbers != list(range(1, k + 1)):
        raise DataError(f"{where}: 'scores' has {k} values but the answers are {len(numbers)} (response_1 ...)")
    return [check.string(record[f"response_{i}"], where, f"response_{i}") for i in numbers]


def _pairs(value: Any, labels: tuple[bool, ...], where: str) -> list[tuple[int, int]]:
    """The pairs as (correct index, incorrect index) into the answers."""
    key = "sampled_conflict_pairs"
    if not isinstance(value, list | tuple):
        raise DataError(f"{where}: '{key}' must be a list of [i, j] index pairs")
    out = []
    for n, pair in enumerate(value):
        ok = isinstance(pair, list | tuple) and len(pair) == 2
        if not ok or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(labels) for i in pair):
            raise DataError(f"{where}: '{key}[{n}]' must be two answer indices in 0..{len(labels) - 1}")
        i, j = pair
        if labels[i] == labels[j]:
            raise DataError(f"{where}: '{key}[{n}]' = [{i}, {j}] is no conflict pair (both answers are "
                            f"{'correct' if labels[i] else 'incorrect'})")  # fmt: skip
        out.append((i, j) if labels[i] else (j, i))
    return out


def positions(labels: Sequence[bool]) -> dict[int, int]:
    """Answer index -> its index among the correct answers (or among the incorrect ones), in answer order."""
    return {i: n for side in (True, False) for n, i in enumerate(i for i, label in enumerate(labels) if label == side)}


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated best-of-K row, or a DataError naming file and record."""
    record, where = check.record(record, path, index, REQUIRED)
    name = set_of(record, where)
    labels = _labels(record["scores"], where)
    answers = _responses(record, len(labels), where)
    pairs = _pairs(record["sampled_conflict_pairs"], labels, where)
    position = positions(labels)
    question = check.ident(record["question_id"], where, "question_id")
    model = record.get("model_name")
    if model is not None and not isinstance(model, str):
        raise DataError(f"{where}: 'model_name' must be a string, got {type(model).__name__}")
    return Example(
        id=f"{name}:{question}" + (f":{model}" if model else ""),
        benchmark="ppe-correctness",
        group=name,
        prompt=check.prompt(record["prompt"], where),
        chosen=tuple(a for a, label in zip(answers, labels, strict=True) if label),
        rejected=tuple(a for a, label in zip(answers, labels, strict=True) if not label),
        pairs=tuple((position[c], position[r]) for c, r in pairs),
        extra={"question_id": question, "model_name": model, "labels": list(labels)},
    )
