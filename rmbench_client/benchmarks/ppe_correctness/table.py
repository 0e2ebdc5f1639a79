"""PPE Correctness's summary as rows (the report page) and as a terminal table: its sets (accuracy, and best-of-K
for reward models), then their mean accuracy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..shared.formatting import percent
from ..shared.tables import group_rows, with_accuracy
from ..spec import Row
from .constants import BEST_OF_K_SHOWN

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


def correctness_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """Accuracy over the sampled conflict pairs per set (n: rows), then the mean over the sets."""
    ci = summary.get("ci", {})
    rows = group_rows(summary.get("sets", {}), ci.get("sets", {}), summary.get("n", {}))
    return with_accuracy(rows, summary.get("accuracy"), ci.get("accuracy"), None)


def correctness_table(summary: dict, title: str) -> Table:
    """The sets' accuracies (and pairs), with the best-of-K curve's shown points where rewards give one."""
    from rich.table import Table

    bok = summary.get("best_of_k", {})
    shown = [k for k in BEST_OF_K_SHOWN if any(len(b["curve"]) >= k for b in bok.values())]
    table = Table(title=title, caption="best-of-K: correctness of the top-reward answer of K" if bok else None)
    for name, justify in (("set", "left"), ("accuracy", "right"), ("pairs", "right"), ("rows", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for k in shown:
        table.add_column(f"bo{k}", justify="right")
    ci = summary.get("ci", {}).get("sets", {})
    for name, value in summary.get("sets", {}).items():
        curve = bok.get(name, {}).get("curve", [])
        points = [percent(curve[k - 1]) if k <= len(curve) else "" for k in shown]
        pairs, rows = summary.get("pairs", {}).get(name, ""), summary.get("n", {}).get(name, "")
        table.add_row(name, percent(value, ci.get(name)), str(pairs), str(rows), *points)
    table.add_section()
    accuracy = percent(summary.get("accuracy"), summary.get("ci", {}).get("accuracy"))
    table.add_row("[bold]accuracy[/bold]", accuracy, "", "", *[""] * len(shown))
    return table
