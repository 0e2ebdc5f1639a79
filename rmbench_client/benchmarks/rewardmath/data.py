"""RewardMATH's records (`dataset/benchmark/RewardMATH_direct.json` of kimsh0507/RewardMATH_official at cde06ab; the
hub's `RewardMATH/RewardMATH` in the same layout): one record per solution, `problem`, `answer`, `eval_solution`
(its steps), `solution_reference` (who wrote it), `solution_type` (chosen / rejected), `subject`, `level`,
`problem_id`, `id`. A problem's records are gathered into one example (`gather`): its one chosen solution against
its rejected ones, in file order, a solution's text its steps joined by newlines, as upstream gives a reward model
a solution (`src/prompts.py`: `"\\n".join(solution)` as the assistant's turn).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files, record_name
from .constants import NAME, SUBJECTS


def gather(records: Iterable[Any], path: Path) -> Iterator[dict[str, Any]]:
    """One object per problem (`problem_id`, in the order problems first appear), holding its solution records and
    their indices in the file."""
    problems: dict[str, list[tuple[int, Any]]] = {}
    for i, rec in enumerate(records):
        rec, where = check.record(rec, path, i, ("problem_id",))
        problems.setdefault(check.ident(rec["problem_id"], where, "problem_id"), []).append((i, rec))
    for pid, solutions in problems.items():
        yield {"problem_id": pid, "solutions": solutions}


def parse_record(record: dict[str, Any], path: Path, index: int) -> Example:
    """A problem's solutions as one example: the chosen solution, then the rejected ones in file order; a
    DataError naming the record for a missing field, a problem without exactly one chosen solution, or solutions
    of one problem that disagree on the problem."""
    chosen: list[tuple[str, str, tuple[str, ...]]] = []
    rejected: list[tuple[str, str, tuple[str, ...]]] = []
    first: dict[str, Any] = {}
    for i, rec in record["solutions"]:
        rec, where = check.record(rec, path, i, ("problem", "eval_solution", "solution_reference", "solution_type",
                                                 "subject", "level"))  # fmt: skip
        steps = check.strings(rec["eval_solution"], where, "eval_solution")
        side = check.choice(rec["solution_type"], where, "solution_type", ("chosen", "rejected"))
        ref = check.string(rec["solution_reference"], where, "solution_reference")
        (chosen if side == "chosen" else rejected).append((ref, "\n".join(steps), steps))
        first = first or {"problem": rec["problem"], "subject": rec["subject"], "level": rec["level"], "at": where}
        if (rec["problem"], rec["subject"]) != (first["problem"], first["subject"]):
            raise DataError(f"{where}: problem_id {record['problem_id']} names another problem or subject than "
                            f"{first['at']}")  # fmt: skip
    where = record_name(path, record["solutions"][0][0], record["solutions"][0][1])
    if len(chosen) != 1 or not rejected:
        raise DataError(f"{where}: problem_id {record['problem_id']} has {len(chosen)} chosen and {len(rejected)} "
                        "rejected solution(s); RewardMATH ranks one chosen solution among rejected ones")  # fmt: skip
    solutions = [*chosen, *rejected]
    return Example(
        id=record["problem_id"],
        benchmark=NAME,
        group=check.choice(first["subject"], where, "subject", SUBJECTS),
        prompt=check.text(first["problem"], where, "problem"),
        chosen=(chosen[0][1],),
        rejected=tuple(text for _, text, _ in rejected),
        extra={"solution_reference": [ref for ref, _, _ in solutions], "level": first["level"]},
        solutions=tuple(steps for _, _, steps in solutions),  # what a process model scores step by step
    )


def files_in(directory: Path) -> list[Path]:
    """Its data files in a directory and below it (the hub keeps them in a sub-folder)."""
    return data_files(directory, nested=True)
