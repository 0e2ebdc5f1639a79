"""What every benchmark's table is built from: rows of a summary's numbers (also drawn by the report page) and the
rich table that prints them, percent with one decimal and 95% intervals; the style-bias table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from msgspec import UnsetType

from ..spec import Interval, Row
from .formatting import percent

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table


T = TypeVar("T")
S = TypeVar("S")  # a summary


def known(value: T | UnsetType) -> T | None:
    """A summary's number (or interval) it may lack: None where it does."""
    return None if isinstance(value, UnsetType) else value


def cell_of(value: float | None, ci: Interval | None) -> list[float] | None:
    """A row's cell: [value, low, high], [value] without an interval, None without a value."""
    return None if value is None else [value, *ci] if ci else [value]


def group_rows(
    values: Mapping[str, float | None],
    ci: Mapping[str, Interval],
    n: Mapping[str, int],
    total: bool = False,
) -> list[Row]:
    """One row per group (subsets, sets, scenarios, categories): its value with its interval, and its n."""
    return [{"name": g, "values": [cell_of(v, ci.get(g))], "n": n.get(g), "total": total} for g, v in values.items()]


def rich_table(columns: list[str], rows: list[Row], title: str, first: str) -> Table:
    from rich.table import Table

    table = Table(title=title)
    table.add_column(first)
    for col in columns:
        table.add_column(col, justify="right")
    table.add_column("n", justify="right")
    previous_total = False
    for row in rows:
        if row["total"] and not previous_total:
            table.add_section()
        previous_total = row["total"]
        cells = [percent(v[0], v[1:] or None) if v else "" for v in row["values"]]
        name = f"[bold]{row['name']}[/bold]" if row["total"] else row["name"]
        table.add_row(name, *cells, "" if row["n"] is None else str(row["n"]))
    return table


def rows_table(
    rows: Callable[[S], tuple[list[str], list[Row]]], first: str, caption: Callable[[S], str | None] | None = None
) -> Callable[[S, str], Table]:
    """A summary's terminal table drawn from its rows (`rich_table`): `first` heads the rows' names; `caption`, when
    given, says what the rows alone do not."""

    def table(summary: S, title: str) -> Table:
        drawn = rich_table(*rows(summary), title, first)
        if caption is not None:
            drawn.caption = caption(summary)
        return drawn

    return table


def _rho(block: Mapping[str, Any] | None) -> str:
    """'0.41 [0.37, 0.45]': a rank correlation and its 95% interval; '–' where undefined."""
    if not block or block.get("rho") is None:
        return "–"
    ci = block.get("ci")
    return f"{block['rho']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def style_bias_table(summary: Mapping[str, Any]) -> Table | None:
    """The summary's style-bias diagnostics per group and overall: for each style pair the percent of
    same-substance triples where the more elaborate style scores higher, and the score-length rank correlation."""
    from rich.table import Table

    bias = summary.get("style_bias")
    if not bias:
        return None
    pairs = list(bias.get("pairs", {}))
    corr = bias.get("length_correlation")
    groups = list(bias.get("groups") or (corr or {}).get("groups") or {})
    what = "% of same-substance triples scored higher in the more elaborate style; " if pairs else ""
    table = Table(title="style bias", caption=f"{what}length ρ: Spearman of score and length (characters)")
    table.add_column("group")
    for name in pairs:
        table.add_column(name.replace("<", " < "), justify="right")
    if corr:
        table.add_column("length ρ", justify="right", no_wrap=True)  # an interval split over lines reads badly

    def row(name: str, cells: Mapping[str, Any], rho: Mapping[str, Any] | None) -> None:
        values = [percent(cells[p]["prefers"], cells[p]["ci"]) if p in cells else "–" for p in pairs]
        table.add_row(name, *values, *([_rho(rho)] if corr else []))

    for g in groups:
        row(g, bias.get("groups", {}).get(g, {}), (corr or {}).get("groups", {}).get(g))
    table.add_section()
    row("all", bias.get("pairs", {}), corr)
    return table


def subset_rows(
    table: Table, subsets: Mapping[str, float | None], ci: Mapping[str, Interval], n: Mapping[str, int]
) -> None:
    """The subset / score / n columns and a row per subset, then a section line."""
    table.add_column("subset")
    table.add_column("score", justify="right")
    table.add_column("n", justify="right")
    for name, value in subsets.items():
        table.add_row(name, percent(value, ci.get(name)), str(n.get(name, "")))
    table.add_section()


def with_accuracy(
    rows: list[Row], accuracy: float | None, ci: Interval | None, n: int | None
) -> tuple[list[str], list[Row]]:
    """One column, accuracy: `rows`, then the overall accuracy (with its interval) when there is one."""
    if accuracy is not None:
        rows.append({"name": "accuracy", "values": [cell_of(accuracy, ci)], "n": n, "total": True})
    return ["accuracy"], rows
