"""PRMBench's summary as rows (the report page) and as a terminal table: PRMScore and the F1s per error class,
group and overall; percent, with 95% intervals where the summary has them."""

from __future__ import annotations

import msgspec

from ..shared.steps import caption, f1_cell
from ..shared.tables import cell_of, rows_table
from ..spec import Row
from .constants import GROUPS
from .summary import PRMBenchSummary


def rows(summary: PRMBenchSummary) -> tuple[list[str], list[Row]]:
    """PRMScore, F1 on correct steps, F1 on erroneous steps; a row per error class, per group, then overall."""
    ci = summary.ci
    undefined = {} if summary.undefined is msgspec.UNSET else summary.undefined
    short = {c: s for group in GROUPS.values() for c, s in group.items()}
    rows: list[Row] = []
    for c, value in summary.classes.items():
        d = summary.details[c]
        erroneous = d.counts.TN + d.counts.FP  # none (multi_solutions): no F1 on erroneous steps
        negative = f1_cell(d.negative_f1) if erroneous else None
        values = [cell_of(value, ci.classes.get(c)), f1_cell(d.f1), negative]
        row: Row = {"name": f"{c} ({short.get(c, '?')})", "values": values, "n": d.n, "total": False}
        keys = {"F1 correct": f"{c}/f1", "F1 erroneous": f"{c}/negative_f1"}
        why = {col: undefined[key] for col, key in keys.items() if key in undefined}
        if not erroneous:
            why.setdefault("F1 erroneous", f"no erroneous step in {c}")
        if why:
            row["why"] = why
        rows.append(row)
    for g, value in summary.groups.items():
        rows.append({"name": g, "values": [cell_of(value, ci.groups.get(g)), None, None], "n": None,
                     "total": True})  # fmt: skip
    overall = [cell_of(summary.overall, ci.overall), None, None]
    rows.append({"name": "overall", "values": overall, "n": sum(summary.n.values()), "total": True})
    return ["PRMScore", "F1 correct", "F1 erroneous"], rows


def what_was_cut(summary: PRMBenchSummary) -> str:
    """The threshold, and the solutions and steps cut at the length limit where there are any."""
    cut = summary.cut
    return caption(summary.threshold, None if cut is msgspec.UNSET else (cut.solutions, cut.steps))


table = rows_table(rows, "error class / group", what_was_cut)
