"""RMB's summary as rows (the report page) and as a terminal table: a row per scenario (its category_path), then
the four sets and overall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .table import Row, _rich, _value

if TYPE_CHECKING:
    from rich.table import Table


def rmb_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """One column, accuracy; a row per scenario, per set, then overall."""
    ci = summary.get("ci", {})
    rows: list[Row] = [
        {"name": g, "values": [_value(v, ci.get("scenarios", {}).get(g))], "n": summary.get("n", {}).get(g)}
        | {"total": False}
        for g, v in summary.get("scenarios", {}).items()
    ]
    rows += [
        {"name": name, "values": [_value(v, ci.get("sets", {}).get(name))], "n": summary.get("set_n", {}).get(name)}
        | {"total": True}
        for name, v in summary.get("sets", {}).items()
    ]
    if "overall" in summary:
        rows.append(
            {"name": "overall", "values": [_value(summary["overall"], ci.get("overall"))], "n": None, "total": True}
        )
    return ["accuracy"], rows


def rmb_table(summary: dict, title: str) -> Table:
    return _rich(*rmb_rows(summary), title, "scenario / set")
