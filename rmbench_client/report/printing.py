"""A run's summary in the terminal: its benchmark's table, the style-bias table, and why it is partial.

Apart from report/table.py, which the registry (benchmarks.py) names for each benchmark's table: this module asks
the registry, so the two never import each other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..benchmarks.registry import of_summary
from ..benchmarks.shared.tables import style_bias_table

if TYPE_CHECKING:
    from rich.console import Console


def print_summary(summary: dict, title: str, console: Console | None = None) -> None:
    from rich.console import Console

    console = console or Console()
    if summary.get("complete") is False:
        title += " — partial"
    bench = of_summary(summary, title)
    console.print(bench.table(bench.read_summary(summary), title))
    bias = style_bias_table(summary)
    if bias is not None:
        console.print(bias)
    for reason in summary.get("partial", []):
        console.print(f"[yellow]partial: {reason}[/yellow]")
