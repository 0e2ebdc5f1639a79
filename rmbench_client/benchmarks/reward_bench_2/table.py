"""RewardBench 2's summary as a terminal table: subset scores (Ties: its composite score) and the final score."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.formatting import percent
from ..shared.tables import subset_rows

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def rewardbench2_table(summary: dict, title: str) -> Table:
    """Subset scores (Ties: its composite score) and the final score, the plain mean of the subsets."""
    from rich.table import Table

    table = Table(title=title)
    subset_rows(table, summary["subsets"], summary.get("ci", {}).get("subsets", {}), summary.get("n", {}))
    table.add_row("[bold]score[/bold]", percent(summary["score"], summary.get("ci", {}).get("score")), "")
    ratings = summary.get("ratings")
    if ratings:
        table.caption = f"{ratings['unparsed']} unparsed rating(s); {ratings['unrated_prompts']} prompt(s) unrated"
    return table
