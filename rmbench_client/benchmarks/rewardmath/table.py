"""RewardMATH's table: accuracy, mrr and accuracy with ties per subject and overall; the aggregations of step scores
beneath, as upstream's `--prm_mode` prints them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import UnsetType

from ..shared.tables import rich_table
from ..spec import Row
from .scoring import FIGURES
from .summary import RewardMathSummary

if TYPE_CHECKING:  # rich is imported where a table is drawn
    from rich.table import Table


def rows(summary: RewardMathSummary) -> tuple[list[str], list[Row]]:
    """A row per subject, then every problem (upstream's figures) and the subjects' mean; then each aggregation of
    step scores where the run has them."""
    columns, out = FIGURES.rows(summary)
    if not isinstance(summary.aggregations, UnsetType):
        for name, figs in summary.aggregations.items():
            used = " (used)" if name == summary.prm_function else ""
            out.append({"name": f"steps: {name}{used}", "values": [[figs[f]] for f in columns], "n": None,
                        "total": True})  # fmt: skip
    return columns, out


def table(summary: RewardMathSummary, title: str) -> Table:
    drawn = rich_table(*rows(summary), title, "subject")
    drawn.caption = ("accuracy: the chosen solution scored above all rejected ones (w/ ties: not below them); "
                     "mrr: 1 / its rank, a tie ranked against it")  # fmt: skip
    return drawn
