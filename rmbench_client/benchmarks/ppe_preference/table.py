"""PPE Preference's summary as rows (the report page) and as a terminal table: its categories, then its accuracy."""

from __future__ import annotations

from msgspec import UnsetType

from ..shared.tables import group_rows, rows_table, with_accuracy
from ..spec import Row
from .summary import PreferenceSummary


def rows(summary: PreferenceSummary) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per category (they overlap), then the accuracy over every battle."""
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    rows = group_rows(summary.categories, ci.categories if ci else {}, summary.category_n)
    accuracy = None if isinstance(summary.accuracy, UnsetType) else summary.accuracy
    return with_accuracy(rows, accuracy, ci.accuracy if ci else None, sum(summary.n.values()))


def caption(summary: PreferenceSummary) -> str | None:
    """The battles whose two rewards were equal (counted 1/2), where there are any."""
    if not summary.tied_rewards:  # unset or 0: no caption
        return None
    return f"{summary.tied_rewards} battle(s) with equal rewards, counted 1/2"


table = rows_table(rows, "category", caption)
