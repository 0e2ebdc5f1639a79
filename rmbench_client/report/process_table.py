"""The process benchmarks' summaries as rows (the report page) and terminal tables: PRMBench's classes, groups and
overall PRMScore; ProcessBench's splits and average F1. Percent, with 95% intervals where the summary has them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import constants as C
from .table import Row, _rich, _value

if TYPE_CHECKING:
    from rich.table import Table


def _f1(value: float | None) -> list[float] | None:
    return None if value is None or value < 0 else [value]  # PRMBench's -1: undefined


def prmbench_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """PRMScore, F1 on correct steps, F1 on erroneous steps; a row per error class, per group, then overall."""
    ci = summary.get("ci", {})
    short = {c: s for group in C.PRMBENCH_GROUPS.values() for c, s in group.items()}
    rows: list[Row] = []
    for c, value in summary.get("classes", {}).items():
        d = summary.get("details", {}).get(c, {})
        counts = d.get("counts", {})
        erroneous = counts.get("TN", 0) + counts.get("FP", 0)  # none (multi_solutions): no F1 on erroneous steps
        negative = _f1(d.get("negative_f1")) if erroneous else None
        values = [_value(value, ci.get("classes", {}).get(c)), _f1(d.get("f1")), negative]
        rows.append({"name": f"{c} ({short.get(c, '?')})", "values": values, "n": d.get("n"), "total": False})
    for g, value in summary.get("groups", {}).items():
        rows.append({"name": g, "values": [_value(value, ci.get("groups", {}).get(g)), None, None], "n": None,
                     "total": True})  # fmt: skip
    if "overall" in summary:
        n = sum(summary.get("n", {}).values())
        rows.append({"name": "overall", "values": [_value(summary["overall"], ci.get("overall")), None, None],
                     "n": n, "total": True})  # fmt: skip
    return ["PRMScore", "F1 correct", "F1 erroneous"], rows


def processbench_rows(summary: dict) -> tuple[list[str], list[Row]]:
    """Accuracy on erroneous and on correct solutions and their F1; a row per split, then the average F1."""
    ci = summary.get("ci", {}).get("splits", {})
    rows: list[Row] = []
    for s, f1 in summary.get("splits", {}).items():
        d = summary.get("details", {}).get(s, {})
        values = [_value(d.get("error_acc"), None), _value(d.get("correct_acc"), None), _value(f1, ci.get(s))]
        rows.append({"name": s, "values": values, "n": summary.get("n", {}).get(s), "total": False})
    if "average_f1" in summary:
        average = _value(summary["average_f1"], summary.get("ci", {}).get("average_f1"))
        rows.append({"name": "average F1", "values": [None, None, average], "n": sum(summary.get("n", {}).values()),
                     "total": True})  # fmt: skip
    return ["error acc", "correct acc", "F1"], rows


def _caption(summary: dict) -> str:
    parts = [f"threshold {summary.get('threshold', C.PRM_THRESHOLD)}"]
    if "cut" in summary:
        parts.append(f"{summary['cut']['solutions']} solution(s) cut: {summary['cut']['steps']} step(s) not counted")
    if "undecided" in summary:
        parts.append(f"{summary['undecided']['solutions']} solution(s) undecided (cut), counted as misses")
    return "; ".join(parts)


def prmbench_table(summary: dict, title: str) -> Table:
    table = _rich(*prmbench_rows(summary), title, "error class / group")
    table.caption = _caption(summary)
    return table


def processbench_table(summary: dict, title: str) -> Table:
    table = _rich(*processbench_rows(summary), title, "split")
    table.caption = _caption(summary)
    return table
