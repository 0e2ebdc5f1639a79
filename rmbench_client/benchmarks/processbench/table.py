"""ProcessBench's summary as rows (the report page) and as a terminal table: accuracy on erroneous and correct
solutions and F1 per split, then the average F1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.steps import caption
from ..shared.tables import cell_of, rich_table
from ..spec import Row

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def processbench_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """Accuracy on erroneous and on correct solutions and their F1; a row per split, then the average F1."""
    ci = summary.get("ci", {}).get("splits", {})
    rows: list[Row] = []
    for s, f1 in summary.get("splits", {}).items():
        d = summary.get("details", {}).get(s, {})
        values = [cell_of(d.get("error_acc"), None), cell_of(d.get("correct_acc"), None), cell_of(f1, ci.get(s))]
        rows.append({"name": s, "values": values, "n": summary.get("n", {}).get(s), "total": False})
    if "average_f1" in summary:
        average = cell_of(summary["average_f1"], summary.get("ci", {}).get("average_f1"))
        rows.append({"name": "average F1", "values": [None, None, average], "n": sum(summary.get("n", {}).values()),
                     "total": True})  # fmt: skip
    return ["error acc", "correct acc", "F1"], rows


def processbench_table(summary: dict, title: str) -> Table:
    table = rich_table(*processbench_rows(summary), title, "split")
    table.caption = caption(summary)
    return table
