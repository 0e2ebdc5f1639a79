"""ProcessBench's summary as rows (the report page) and as a terminal table: accuracy on erroneous and correct
solutions and F1 per split, then the average F1."""

from __future__ import annotations

import msgspec

from ..shared.steps import caption, defined, known
from ..shared.tables import cell_of, rows_table
from ..spec import Row
from .summary import ProcessBenchSummary


def rows(summary: ProcessBenchSummary) -> tuple[list[str], list[Row]]:
    """Accuracy on erroneous and on correct solutions and their F1; a row per split, then the average F1."""
    ci = defined(summary.ci.splits)
    undefined = {} if summary.undefined is msgspec.UNSET else summary.undefined
    rows: list[Row] = []
    for s, f1 in summary.splits.items():
        d = summary.details[s]
        values = [cell_of(d.error_acc, None), cell_of(d.correct_acc, None), cell_of(f1, ci.get(s))]
        keys = {"error acc": f"{s}/error_acc", "correct acc": f"{s}/correct_acc", "F1": s}
        why = {col: undefined[key] for col, key in keys.items() if key in undefined}
        row: Row = {"name": s, "values": values, "n": summary.n.get(s), "total": False}
        if why:
            row["why"] = why
        rows.append(row)
    average = cell_of(summary.average_f1, known(summary.ci.average_f1))
    total: Row = {"name": "average F1", "values": [None, None, average], "n": sum(summary.n.values()), "total": True}
    if "average_f1" in undefined:
        total["why"] = {"F1": undefined["average_f1"]}
    return ["error acc", "correct acc", "F1"], [*rows, total]


def undecided(summary: ProcessBenchSummary) -> str:
    """The threshold, and the solutions no step of which could be judged where there are any."""
    left = summary.undecided
    return caption(summary.threshold, undecided=None if left is msgspec.UNSET else left.solutions)


table = rows_table(rows, "split", undecided)
