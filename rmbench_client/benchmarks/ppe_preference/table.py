"""PPE Preference's summary as rows (the report page) and as a terminal table: its categories, then its accuracy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import UnsetType

from ..shared.tables import group_rows, rich_table, with_accuracy
from ..spec import Row
from .summary import PreferenceSummary

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def preference_rows(summary: PreferenceSummary) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per category (they overlap), then the accuracy over every battle."""
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    rows = group_rows(summary.categories, ci.categories if ci else {}, summary.category_n)
    accuracy = None if isinstance(summary.accuracy, UnsetType) else summary.accuracy
    return with_accuracy(rows, accuracy, ci.accuracy if ci else None, sum(summary.n.values()))


def preference_table(summary: PreferenceSummary, title: str) -> Table:
    table = rich_table(*preference_rows(summary), title, "category")
    if summary.tied_rewards:  # unset or 0: no caption
        table.caption = f"{summary.tied_rewards} battle(s) with equal rewards, counted 1/2"
    return table
