"""PPE Correctness's summary as rows (the report page) and as a terminal table: its sets (accuracy, and best-of-K
for reward models), then their mean accuracy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import UnsetType

from ..shared.formatting import percent
from ..shared.tables import group_rows, with_accuracy
from ..spec import Row
from .constants import BEST_OF_K_SHOWN
from .summary import CorrectnessSummary

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def rows(summary: CorrectnessSummary) -> tuple[list[str], list[Row]]:
    """Accuracy over the sampled conflict pairs per set (n: rows), then the mean over the sets."""
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    rows = group_rows(summary.sets, ci.sets if ci else {}, summary.n)
    accuracy = None if isinstance(summary.accuracy, UnsetType) else summary.accuracy
    return with_accuracy(rows, accuracy, ci.accuracy if ci else None, None)


def table(summary: CorrectnessSummary, title: str) -> Table:
    """The sets' accuracies (and pairs), with the best-of-K curve's shown points where rewards give one."""
    from rich.table import Table

    bok = {} if isinstance(summary.best_of_k, UnsetType) else summary.best_of_k
    shown = [k for k in BEST_OF_K_SHOWN if any(len(b.curve) >= k for b in bok.values())]
    drawn = Table(title=title, caption="best-of-K: correctness of the top-reward answer of K" if bok else None)
    for name, justify in (("set", "left"), ("accuracy", "right"), ("pairs", "right"), ("rows", "right")):
        drawn.add_column(name, justify=justify)  # type: ignore[arg-type]
    for k in shown:
        drawn.add_column(f"bo{k}", justify="right")
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    for name, value in summary.sets.items():
        curve = bok[name].curve if name in bok else []
        points = [percent(curve[k - 1]) if k <= len(curve) else "" for k in shown]
        pairs, records = summary.pairs.get(name, ""), summary.n.get(name, "")
        drawn.add_row(name, percent(value, ci.sets.get(name) if ci else None), str(pairs), str(records), *points)
    drawn.add_section()
    mean = None if isinstance(summary.accuracy, UnsetType) else summary.accuracy
    accuracy = percent(mean, ci.accuracy if ci else None)
    drawn.add_row("[bold]accuracy[/bold]", accuracy, "", "", *[""] * len(shown))
    return drawn
