"""RM-Bench's summary as rows (the report page) and as a terminal table: easy / normal / hard / avg per domain,
then overall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.tables import cell_of, known, rich_table
from ..spec import Row
from .scoring import LEVELS, level_intervals, level_values
from .summary import Domain, Overall, RMBenchSummary

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def rmbench_rows(summary: RMBenchSummary) -> tuple[list[str], list[Row]]:
    """Columns easy / normal / hard / avg; a row per domain, then overall."""

    def row(name: str, d: Domain | Overall, total: bool) -> Row:
        values = [cell_of(v, ci) for v, ci in zip(level_values(d), level_intervals(d), strict=True)]
        return {"name": name, "values": values, "n": known(d.n), "total": total}

    rows = [row(name, d, False) for name, d in summary.domains.items()]
    if summary.overall != Overall():  # an overall exists where some domain was scored
        rows.append(row("overall", summary.overall, True))
    return [*LEVELS, "avg"], rows


def rmbench_table(summary: RMBenchSummary, title: str) -> Table:
    return rich_table(*rmbench_rows(summary), title, "domain")
