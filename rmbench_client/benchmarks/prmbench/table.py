"""PRMBench's summary as rows (the report page) and as a terminal table: PRMScore and the F1s per error class,
group and overall; percent, with 95% intervals where the summary has them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.steps import caption, f1_cell
from ..shared.tables import cell_of, rich_table
from ..spec import Row
from .constants import GROUPS

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def prmbench_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """PRMScore, F1 on correct steps, F1 on erroneous steps; a row per error class, per group, then overall."""
    ci = summary.get("ci", {})
    short = {c: s for group in GROUPS.values() for c, s in group.items()}
    rows: list[Row] = []
    for c, value in summary.get("classes", {}).items():
        d = summary.get("details", {}).get(c, {})
        counts = d.get("counts", {})
        erroneous = counts.get("TN", 0) + counts.get("FP", 0)  # none (multi_solutions): no F1 on erroneous steps
        negative = f1_cell(d.get("negative_f1")) if erroneous else None
        values = [cell_of(value, ci.get("classes", {}).get(c)), f1_cell(d.get("f1")), negative]
        rows.append({"name": f"{c} ({short.get(c, '?')})", "values": values, "n": d.get("n"), "total": False})
    for g, value in summary.get("groups", {}).items():
        rows.append({"name": g, "values": [cell_of(value, ci.get("groups", {}).get(g)), None, None], "n": None,
                     "total": True})  # fmt: skip
    if "overall" in summary:
        n = sum(summary.get("n", {}).values())
        rows.append({"name": "overall", "values": [cell_of(summary["overall"], ci.get("overall")), None, None],
                     "n": n, "total": True})  # fmt: skip
    return ["PRMScore", "F1 correct", "F1 erroneous"], rows


def prmbench_table(summary: dict, title: str) -> Table:
    table = rich_table(*prmbench_rows(summary), title, "error class / group")
    table.caption = caption(summary)
    return table
