"""RewardBench 2's summary as a terminal table: subset scores (Ties: its composite score) and the final score."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import UnsetType

from ..shared.formatting import percent
from ..shared.steps import defined
from ..shared.tables import subset_rows
from .summary import RewardBench2Summary

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def table(summary: RewardBench2Summary, title: str) -> Table:
    """Subset scores (Ties: its composite score) and the final score, the plain mean of the subsets."""
    from rich.table import Table

    drawn = Table(title=title)
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    n = {} if isinstance(summary.n, UnsetType) else summary.n
    intervals = defined({**ci.subsets, "score": ci.score}) if ci else {}
    subset_rows(drawn, summary.subsets, intervals, n)
    score = None if isinstance(summary.score, UnsetType) else summary.score
    drawn.add_row("[bold]score[/bold]", percent(score, intervals.get("score")), "")
    ratings = summary.ratings
    if not isinstance(ratings, UnsetType):
        drawn.caption = f"{ratings.unparsed} unparsed rating(s); {ratings.unrated_prompts} prompt(s) unrated"
    return drawn
