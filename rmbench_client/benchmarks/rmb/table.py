"""RMB's summary as rows (the report page) and as a terminal table: a row per scenario (its category_path), then
the four sets and overall."""

from __future__ import annotations

from msgspec import UnsetType

from ..shared.tables import cell_of, group_rows, rows_table
from ..spec import Row
from .summary import RmbSummary


def rows(summary: RmbSummary) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per scenario, per set, then overall."""
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    rows = group_rows(summary.scenarios, ci.scenarios if ci else {}, summary.n)
    rows += group_rows(summary.sets, ci.sets if ci else {}, summary.set_n, total=True)
    if not isinstance(summary.overall, UnsetType):
        overall = cell_of(summary.overall, ci.overall if ci else None)
        rows.append({"name": "overall", "values": [overall], "n": None, "total": True})
    return ["accuracy"], rows


table = rows_table(rows, "scenario / set")
