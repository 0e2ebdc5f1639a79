"""How every report writes a number: a fraction in [0, 1] as a percent, with half its 95% interval when known;
and the matplotlib figures' one setup (files only, no display, nothing of pyplot's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def percent(value: float | None, ci: Sequence[float] | None = None, digits: int = 1) -> str:
    """'87.5', or '87.5 ±1.2' with an interval; '' for a value a run lacks."""
    if value is None:
        return ""
    text = f"{100 * value:.{digits}f}"
    if ci is not None:
        text += f" ±{100 * (ci[1] - ci[0]) / 2:.{digits}f}"
    return text


def figure(**options: Any) -> Any:
    """A matplotlib Figure drawn by Agg, to be saved to a file (`options`: Figure's, e.g. figsize). Not through pyplot:
    its backend and current figure are the caller's (a notebook's inline plots), and a figure pyplot never held
    needs no closing. matplotlib is imported on first use: it costs about a second."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**options)
    FigureCanvasAgg(fig)  # attaches itself as fig.canvas
    return fig


def fitted_tables(title: str | None, header: list[str], rows: list[list[str]], width: int) -> list[Any]:
    """A table as rich Tables no wider than `width` where it can be: the first column (what a row is: a model, a
    number) repeated in each, the other columns in groups that fit. No cell or header is ever cut or folded: a
    model name or a number is always whole."""
    from rich.table import Table

    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]

    def span(columns: list[int]) -> int:
        return 1 + sum(widths[c] + 3 for c in columns)  # a border, and per column its padding and border

    groups: list[list[int]] = []
    for c in range(1, len(header)):
        if groups and span([0, *groups[-1], c]) <= width:
            groups[-1].append(c)
        else:
            groups.append([c])
    tables = []
    for k, group in enumerate(groups or [[]]):
        table = Table(title=title if k == 0 else None)
        for c in [0, *group]:
            table.add_column(header[c], justify="left" if c == 0 else "right", no_wrap=True, min_width=widths[c])
        for row in rows:
            table.add_row(*(row[c] for c in [0, *group]))
        tables.append(table)
    return tables
