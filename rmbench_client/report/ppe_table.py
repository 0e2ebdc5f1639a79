"""PPE's summaries as rows (the report page) and as terminal tables: PPE Preference's categories then its accuracy;
PPE Correctness's sets (accuracy, and best-of-K for reward models) then their mean accuracy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import constants as C
from .formatting import percent
from .table import Row, _rich, _value, group_rows

if TYPE_CHECKING:
    from rich.table import Table


def _with_accuracy(rows: list[Row], summary: dict, n: int | None) -> tuple[list[str], list[Row]]:
    if "accuracy" in summary:
        value = _value(summary["accuracy"], summary.get("ci", {}).get("accuracy"))
        rows.append({"name": "accuracy", "values": [value], "n": n, "total": True})
    return ["accuracy"], rows


def preference_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per category (they overlap), then the accuracy over every battle."""
    return _with_accuracy(group_rows(summary, "categories", "category_n"), summary, sum(summary.get("n", {}).values()))


def preference_table(summary: dict, title: str) -> Table:
    table = _rich(*preference_rows(summary), title, "category")
    if summary.get("tied_rewards"):
        table.caption = f"{summary['tied_rewards']} battle(s) with equal rewards, counted 1/2"
    return table


def correctness_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """Accuracy over the sampled conflict pairs per set (n: rows), then the mean over the sets."""
    return _with_accuracy(group_rows(summary, "sets"), summary, None)


def correctness_table(summary: dict, title: str) -> Table:
    """The sets' accuracies (and pairs), with the best-of-K curve's shown points where rewards give one."""
    from rich.table import Table

    bok = summary.get("best_of_k", {})
    shown = [k for k in C.PPE_BEST_OF_K_SHOWN if any(len(b["curve"]) >= k for b in bok.values())]
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
