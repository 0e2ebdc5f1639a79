"""RM-Bench's summary as rows (the report page) and as a terminal table: easy / normal / hard / avg per domain,
then overall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.tables import cell_of, rich_table
from ..spec import Row
from .scoring import LEVELS

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def rmbench_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """Columns easy / normal / hard / avg; a row per domain, then overall."""

    def row(name: str, d: dict, total: bool) -> Row:
        values = [cell_of(d.get(level), d.get("ci", {}).get(level)) for level in (*LEVELS, "avg")]
        return {"name": name, "values": values, "n": d.get("n"), "total": total}

    rows = [row(name, d, False) for name, d in summary.get("domains", {}).items()]
    if summary.get("overall"):
        rows.append(row("overall", summary["overall"], True))
    return [*LEVELS, "avg"], rows


def rmbench_table(summary: dict, title: str) -> Table:
    return rich_table(*rmbench_rows(summary), title, "domain")
