"""RewardBench's summary as rows (the report page) and as a terminal table: a row per subset, per section, then the
score."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.tables import cell_of, rich_table
from ..spec import Row

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def rewardbench_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per subset, per section, then the score."""
    ci = summary.get("ci", {})
    rows: list[Row] = [
        {
            "name": name,
            "values": [cell_of(acc, ci.get("subsets", {}).get(name))],
            "n": summary.get("n", {}).get(name),
            "total": False,
        }
        for name, acc in summary.get("subsets", {}).items()
    ]
    rows += [
        {"name": name, "values": [cell_of(v, ci.get("sections", {}).get(name))], "n": None, "total": True}
        for name, v in summary.get("sections", {}).items()
    ]
    if "score" in summary:
        rows.append({"name": "score", "values": [cell_of(summary["score"], ci.get("score"))], "n": None, "total": True})
    return ["accuracy"], rows


def rewardbench_table(summary: dict, title: str) -> Table:
    return rich_table(*rewardbench_rows(summary), title, "subset / section")
