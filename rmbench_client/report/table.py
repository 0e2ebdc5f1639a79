"""Terminal tables of a summary: percent, one decimal, with 95% intervals.

`rmbench_rows` / `rewardbench_rows` / `pairwise_rows` give the numbers of a summary as rows (also drawn by the
report page); the rich tables print them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..scoring.rmbench import LEVELS
from .formatting import percent

if TYPE_CHECKING:  # rich is imported where a table is drawn: a `run --json` never needs it
    from rich.table import Table

Row = dict  # {"name": str, "values": [[value, low, high] | [value] | None, ...], "n": int | None, "total": bool}


def _value(value: float | None, ci: list[float] | None) -> list[float] | None:
    return None if value is None else [value, *ci] if ci else [value]


def group_rows(summary: dict, key: str, n_key: str = "n", total: bool = False) -> list[Row]:
    """One row per entry of `summary[key]` (subsets, sets, scenarios, categories): its value with the interval
    `ci[key]` gives it, and its n from `summary[n_key]`."""
    ci = summary.get("ci", {}).get(key, {})
    n = summary.get(n_key, {})
    return [{"name": g, "values": [_value(v, ci.get(g))], "n": n.get(g), "total": total}
            for g, v in summary.get(key, {}).items()]  # fmt: skip


def rmbench_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """Columns easy / normal / hard / avg; a row per domain, then overall."""

    def row(name: str, d: dict, total: bool) -> Row:
        values = [_value(d.get(level), d.get("ci", {}).get(level)) for level in (*LEVELS, "avg")]
        return {"name": name, "values": values, "n": d.get("n"), "total": total}

    rows = [row(name, d, False) for name, d in summary.get("domains", {}).items()]
    if summary.get("overall"):
        rows.append(row("overall", summary["overall"], True))
    return [*LEVELS, "avg"], rows


def rewardbench_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per subset, per section, then the score."""
    ci = summary.get("ci", {})
    rows = [
        {
            "name": name,
            "values": [_value(acc, ci.get("subsets", {}).get(name))],
            "n": summary.get("n", {}).get(name),
            "total": False,
        }
        for name, acc in summary.get("subsets", {}).items()
    ]
    rows += [
        {"name": name, "values": [_value(v, ci.get("sections", {}).get(name))], "n": None, "total": True}
        for name, v in summary.get("sections", {}).items()
    ]
    if "score" in summary:
        rows.append({"name": "score", "values": [_value(summary["score"], ci.get("score"))], "n": None, "total": True})
    return ["accuracy"], rows


def pairwise_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per subset, then the prompt-weighted accuracy and the macro average."""
    ci = summary.get("ci", {})
    n = summary.get("n", {})
    rows = [
        {"name": name, "values": [_value(acc, ci.get("subsets", {}).get(name))], "n": n.get(name), "total": False}
        for name, acc in summary.get("subsets", {}).items()
    ]
    for key, name, count in (("accuracy", "accuracy", sum(n.values())), ("macro_accuracy", "macro average", None)):
        if key in summary:
            rows.append({"name": name, "values": [_value(summary[key], ci.get(key))], "n": count, "total": True})
    return ["accuracy"], rows


def _rich(columns: list[str], rows: list[Row], title: str, first: str) -> Table:
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


def rmbench_table(summary: dict, title: str) -> Table:
    return _rich(*rmbench_rows(summary), title, "domain")


def rewardbench_table(summary: dict, title: str) -> Table:
    return _rich(*rewardbench_rows(summary), title, "subset / section")


def _rho(block: dict | None) -> str:
    """'0.41 [0.37, 0.45]': a rank correlation and its 95% interval; '–' where undefined."""
    if not block or block.get("rho") is None:
        return "–"
    ci = block.get("ci")
    return f"{block['rho']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def style_bias_table(summary: dict) -> Table | None:
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

    def row(name: str, cells: dict, rho: dict | None) -> None:
        values = [percent(cells[p]["prefers"], cells[p]["ci"]) if p in cells else "–" for p in pairs]
        table.add_row(name, *values, *([_rho(rho)] if corr else []))

    for g in groups:
        row(g, bias.get("groups", {}).get(g, {}), (corr or {}).get("groups", {}).get(g))
    table.add_section()
    row("all", bias.get("pairs", {}), corr)
    return table


def _subset_rows(table: Table, summary: dict) -> None:
    table.add_column("subset")
    table.add_column("score", justify="right")
    table.add_column("n", justify="right")
    ci = summary.get("ci", {}).get("subsets", {})
    for name, value in summary["subsets"].items():
        table.add_row(name, percent(value, ci.get(name)), str(summary.get("n", {}).get(name, "")))
    table.add_section()


def rewardbench2_table(summary: dict, title: str) -> Table:
    """Subset scores (Ties: its composite score) and the final score, the plain mean of the subsets."""
    from rich.table import Table

    table = Table(title=title)
    _subset_rows(table, summary)
    table.add_row("[bold]score[/bold]", percent(summary["score"], summary.get("ci", {}).get("score")), "")
    ratings = summary.get("ratings")
    if ratings:
        table.caption = f"{ratings['unparsed']} unparsed rating(s); {ratings['unrated_prompts']} prompt(s) unrated"
    return table


def pairwise_table(summary: dict, title: str) -> Table:
    """Subset accuracies, the prompt-weighted accuracy and the subsets' macro average."""
    from rich.table import Table

    table = Table(title=title)
    _subset_rows(table, summary)
    ci = summary.get("ci", {})
    n = sum(summary.get("n", {}).values())
    table.add_row("[bold]accuracy[/bold]", percent(summary["accuracy"], ci.get("accuracy")), str(n))
    table.add_row("[bold]macro average[/bold]", percent(summary["macro_accuracy"], ci.get("macro_accuracy")), "")
    return table
