"""RewardBench's summary as rows (the report page) and as a terminal table: a row per subset, per section, then the
score."""

from __future__ import annotations

from ..shared.tables import cell_of, known, rows_table
from ..spec import Row
from .summary import RewardBenchSummary


def rows(summary: RewardBenchSummary) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per subset, per section, then the score."""
    ci = known(summary.ci)
    n = known(summary.n) or {}
    rows: list[Row] = [
        {
            "name": name,
            "values": [cell_of(acc, ci.subsets.get(name) if ci else None)],
            "n": n.get(name),
            "total": False,
        }
        for name, acc in summary.subsets.items()
    ]
    rows += [
        {"name": name, "values": [cell_of(v, ci.sections.get(name) if ci else None)], "n": None, "total": True}
        for name, v in summary.sections.items()
    ]
    if (score := known(summary.score)) is not None:
        rows.append({"name": "score", "values": [cell_of(score, ci.score if ci else None)], "n": None, "total": True})
    return ["accuracy"], rows


table = rows_table(rows, "subset / section")
