"""RM-Bench's summary as rows (the report page) and as a terminal table: easy / normal / hard / avg per domain,
then overall."""

from __future__ import annotations

from ..shared.tables import cell_of, known, rows_table
from ..spec import Row
from .scoring import LEVELS, level_intervals, level_values
from .summary import Domain, Overall, RMBenchSummary


def rows(summary: RMBenchSummary) -> tuple[list[str], list[Row]]:
    """Columns easy / normal / hard / avg; a row per domain, then overall."""

    def row(name: str, d: Domain | Overall, total: bool) -> Row:
        values = [cell_of(v, ci) for v, ci in zip(level_values(d), level_intervals(d), strict=True)]
        return {"name": name, "values": values, "n": known(d.n), "total": total}

    rows = [row(name, d, False) for name, d in summary.domains.items()]
    if summary.overall != Overall():  # an overall exists where some domain was scored
        rows.append(row("overall", summary.overall, True))
    return [*LEVELS, "avg"], rows


table = rows_table(rows, "domain")
