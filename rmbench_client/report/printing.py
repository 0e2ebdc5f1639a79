"""A run's summary in the terminal: its benchmark's table, the style-bias table, why a figure is undefined and why
the run is partial."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..benchmarks.shared.tables import style_bias_table
from ..results.summary import RunSummary, read_summary

if TYPE_CHECKING:
    from rich.console import Console


def print_summary(summary: RunSummary | Mapping[str, Any], title: str, console: Console | None = None) -> None:
    """A summary's table (`title` its title; an error reading a summary object names it too), its style-bias
    table (a block several benchmarks share: read from the JSON object), why each undefined figure is, and why
    it is partial."""
    from rich.console import Console

    console = console or Console()
    view = summary if isinstance(summary, RunSummary) else read_summary(summary, title)
    shown = title + (" — partial" if view.info.complete is False else "")
    console.print(view.bench.table(view.numbers, shown))
    bias = style_bias_table(dict(view.raw))
    if bias is not None:
        console.print(bias)
    for name, why in view.undefined().items():
        console.print(f"undefined: {name}: {why}", markup=False, highlight=False)
    for reason in view.info.partial:
        console.print(f"[yellow]partial: {reason}[/yellow]")
