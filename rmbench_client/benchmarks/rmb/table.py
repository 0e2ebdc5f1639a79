"""RMB's summary as rows (the report page) and as a terminal table: a row per scenario (its category_path), then
the four sets and overall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.tables import cell_of, group_rows, rich_table
from ..spec import Row

if TYPE_CHECKING:
    from rich.table import Table


def rmb_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per scenario, per set, then overall."""
    ci = summary.get("ci", {})
    rows = group_rows(summary.get("scenarios", {}), ci.get("scenarios", {}), summary.get("n", {}))
    rows += group_rows(summary.get("sets", {}), ci.get("sets", {}), summary.get("set_n", {}), total=True)
    if "overall" in summary:
        overall = cell_of(summary["overall"], summary.get("ci", {}).get("overall"))
        rows.append({"name": "overall", "values": [overall], "n": None, "total": True})
    return ["accuracy"], rows


def rmb_table(summary: dict, title: str) -> Table:
    return rich_table(*rmb_rows(summary), title, "scenario / set")
