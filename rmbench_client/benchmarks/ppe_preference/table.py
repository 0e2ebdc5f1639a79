"""PPE Preference's summary as rows (the report page) and as a terminal table: its categories, then its accuracy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.tables import group_rows, rich_table, with_accuracy
from ..spec import Row

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def preference_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per category (they overlap), then the accuracy over every battle."""
    ci = summary.get("ci", {})
    rows = group_rows(summary.get("categories", {}), ci.get("categories", {}), summary.get("category_n", {}))
    return with_accuracy(rows, summary.get("accuracy"), ci.get("accuracy"), sum(summary.get("n", {}).values()))


def preference_table(summary: dict, title: str) -> Table:
    table = rich_table(*preference_rows(summary), title, "category")
    if summary.get("tied_rewards"):
        table.caption = f"{summary['tied_rewards']} battle(s) with equal rewards, counted 1/2"
    return table
