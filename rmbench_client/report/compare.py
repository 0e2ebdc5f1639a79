"""`rmbench-client compare`: several runs side by side, as a table, Markdown or CSV, and a bar chart.

Columns: the benchmark's headline numbers (RM-Bench: each domain's avg, then the overall easy / normal / hard / avg;
RewardBench: each section, then the final score), as percents; then n (prompts scored), failed, and whether the
result is complete — an incomplete run is marked "partial" so that it never passes for a full score.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from .. import constants as C
from ..benchmarks.shared.formatting import figure, fitted_tables, percent
from ..errors import DataError
from ..results.comparison import PairedDifferences, Run
from ..results.run_directory import make_directory, reporting
from . import differences

Cell = str | float | None  # the name column, else a fraction in [0, 1] or None where the run has no value
STATUS = ("n", "failed", "complete")  # the columns after the numbers


def compare_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[Cell]]]:
    """Header and one row per run: the name, fractions (None where a run lacks the column), then n, failed and
    "yes" / "partial"."""
    heads = [dict(r.summary.headline()) for r in runs]  # each in the benchmark's own column order
    columns = [col for col in dict.fromkeys(c for h in heads for c in h) if any(h.get(col) is not None for h in heads)]
    header = ["model", *columns, *STATUS]
    rows: list[list[Cell]] = []
    for run, values in zip(runs, heads, strict=True):
        info = run.summary.info
        status: list[Cell] = [_count(info.scored), _count(info.failed), _completeness(info.complete)]
        rows.append([run.name, *(values.get(col) for col in columns), *status])
    return header, rows


def _count(n: int | None) -> str:
    return "" if n is None else str(n)  # None: an older summary without the count


def _completeness(complete: bool | None) -> str:
    return "partial" if complete is False else "yes" if complete else "unknown"


def _cell(value: Cell, digits: int = 1) -> str:
    return value if isinstance(value, str) else percent(value, digits=digits)


def render(runs: Sequence[Run], fmt: str, diffs: PairedDifferences | None = None, width: int = 80) -> str | list[Table]:
    """The comparison as rich Tables no wider than `width` (`table`: columns that do not fit go to a further
    table, so names and numbers are always whole), or Markdown / CSV text; with `diffs` (report/differences.py)
    Markdown gains the table of differences and CSV their columns (the terminal prints that table itself)."""
    header, rows = compare_rows(runs)
    if fmt == "table":
        shown = [[_cell(v) if i else str(v) for i, v in enumerate(row)] for row in rows]
        return fitted_tables(f"{runs[0].summary.bench.name} (percent)", header, shown, width)
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join([" --- "] + [" ---: "] * (len(header) - 1)) + "|"]
        for row in rows:
            cells = [str(row[0]).replace("|", "\\|"), *(_cell(v) or "–" for v in row[1:])]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n" + (differences.markdown(diffs) if diffs else "")
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(header + (differences.csv_header(diffs) if diffs else []))
        for k, row in enumerate(rows):
            extra = differences.csv_cells(diffs, k) if diffs else []
            writer.writerow([row[0], *(_cell(v, 2) for v in row[1:]), *extra])
        return buf.getvalue()
    raise DataError(f"unknown format {fmt!r} (table, markdown, csv)")


@dataclass(frozen=True)
class Bars:
    """One run's bars in the chart: percents, the 95% interval of each (NaN where unknown), and the labels."""

    name: str
    values: list[float]
    intervals: list[tuple[float, float]]
    labels: list[str]  # the value, with "*" where it differs significantly from the first run's


def chart_bars(runs: Sequence[Run], diffs: PairedDifferences | None = None) -> tuple[list[str], list[Bars]]:
    """The chart's groups (the benchmark's `chart_columns`, RM-Bench's overall levels; else every headline number)
    and each run's bars."""
    header, rows = compare_rows(runs)
    bench = runs[0].summary.bench
    groups = [g for g in bench.chart_columns if g in header] or header[1 : -len(STATUS)]
    out = []
    for k, row in enumerate(rows):
        values = [
            100 * float(v) if isinstance(v, int | float) else math.nan for v in (row[header.index(g)] for g in groups)
        ]
        known = runs[k].summary.intervals()
        intervals = [(100 * known[g][0], 100 * known[g][1]) if g in known else (math.nan, math.nan) for g in groups]
        marks = diffs.differences[k - 1] if diffs and k else {}
        labels = [
            "" if math.isnan(v) else f"{v:.1f}" + ("*" if (d := marks.get(g)) and d.significant else "")
            for v, g in zip(values, groups, strict=True)
        ]
        out.append(Bars(str(row[0]), values, intervals, labels))
    return groups, out


def bar_chart(runs: Sequence[Run], path: str | Path, diffs: PairedDifferences | None = None) -> Path:
    """A grouped bar chart PNG of `chart_bars`: bars per model, each run's 95% interval as an error bar, `*` on a
    bar that differs significantly from the first run's (given `diffs`)."""
    import numpy as np

    groups, bars = chart_bars(runs, diffs)
    width = 0.8 / len(bars)
    x = np.arange(len(groups))
    fig = figure(figsize=(max(6.0, 1.5 + len(groups) * (0.4 + 0.35 * len(bars))), 4.8))
    ax = fig.subplots()
    for k, run in enumerate(bars):
        values = np.array(run.values)
        ci = np.array(run.intervals).reshape(-1, 2)
        err = np.nan_to_num(np.abs(np.stack([values - ci[:, 0], ci[:, 1] - values])))
        xs = x - 0.4 + width * (k + 0.5)
        ax.bar(xs, values, width, label=run.name, yerr=err, capsize=2, error_kw={"elinewidth": 0.8})
        for xi, v, top, label in zip(xs, values, np.nan_to_num(ci[:, 1], nan=0.0), run.labels, strict=True):
            if label:
                ax.text(xi, max(v, top) + 1, label, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, groups)
    ax.set_ylim(0, 105)
    ax.set_ylabel("accuracy (%)")
    ax.set_title(f"{runs[0].summary.bench.name}: headline numbers")
    if diffs:
        note = f"error bars: 95% intervals; * differs from {diffs.reference} (paired permutation test, p < 0.05)"
        fig.text(0.01, 0.01, note, fontsize=7, color="#555555")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=min(3, len(bars)), frameon=False)
    fig.tight_layout()
    out = Path(path)
    make_directory(out.parent, "the chart's directory")  # a --chart of /dev/null/x/c.png: one line
    with reporting(out.parent, f"writing {out.name}", "the chart's directory"):
        fig.savefig(out, dpi=C.CHART_DPI)
    return out
