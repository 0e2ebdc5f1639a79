"""RMB's summary as rows (the report page) and as a terminal table: a row per scenario (its category_path), then
the four sets and overall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import UnsetType

from ..shared.tables import cell_of, group_rows, rich_table
from ..spec import Row
from .summary import RmbSummary

if TYPE_CHECKING:
    from rich.table import Table


def rmb_rows(summary: RmbSummary) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per scenario, per set, then overall."""
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    rows = group_rows(summary.scenarios, ci.scenarios if ci else {}, summary.n)
    rows += group_rows(summary.sets, ci.sets if ci else {}, summary.set_n, total=True)
    if not isinstance(summary.overall, UnsetType):
        overall = cell_of(summary.overall, ci.overall if ci else None)
        rows.append({"name": "overall", "values": [overall], "n": None, "total": True})
    return ["accuracy"], rows


def rmb_table(summary: RmbSummary, title: str) -> Table:
    return rich_table(*rmb_rows(summary), title, "scenario / set")
