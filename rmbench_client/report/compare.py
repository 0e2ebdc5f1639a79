"""`rmbench-client compare`: several runs side by side, as a table, Markdown or CSV, and a bar chart.

Columns: the benchmark's headline numbers (RM-Bench: each domain's avg, then the overall easy / normal / hard / avg;
RewardBench: each section, then the final score), as percents; then n (prompts scored), failed, and whether the
result is complete — an incomplete run is marked "partial" so that it never passes for a full score.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..benchmarks.shared.formatting import fitted_tables, percent, pyplot
from ..errors import DataError
from ..run_directory import without_summary
from . import differences

Run = tuple[str, dict]
Cell = str | float | None  # the name column, else a fraction in [0, 1] or None where the run has no value


def _read_summary(raw: str) -> tuple[Path, dict]:
    path = Path(raw)
    file = path / C.SUMMARY_FILE if path.is_dir() else path
    if not file.is_file():
        if why := without_summary(path):
            raise DataError(f"{raw}: no {C.SUMMARY_FILE}: {why}")
        raise DataError(f"{raw}: not a run directory holding {C.SUMMARY_FILE}, nor a summary file")
    try:
        summary = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{file}: not a readable summary ({exc})") from None
    bench = benchmarks.of_summary(summary, str(file))
    if not bench.scored_groups(bench.read_summary(summary)):
        raise DataError(f"{file}: the run scored no prompt")
    return file, summary


def load_runs(paths: list[str]) -> list[Run]:
    """(name, summary) per path: a run directory or a summary.json; one benchmark for all; names made unique."""
    if not paths:
        raise DataError("compare needs at least one run directory or summary file")
    runs: list[Run] = []
    for raw in paths:
        file, summary = _read_summary(raw)
        name = str(summary.get("model") or file.parent.resolve().name)
        if any(name == n for n, _ in runs):
            name = f"{name} ({raw})"  # the same model twice (two configs): keep the rows apart
        runs.append((name, summary))
    benchmarks = {s["benchmark"] for _, s in runs}
    if len(benchmarks) > 1:
        which = ", ".join(f"{n}: {s['benchmark']}" for n, s in runs)
        raise DataError(f"cannot compare runs of different benchmarks ({which})")
    return runs


STATUS = ("n", "failed", "complete")  # the columns after the numbers


def compare_rows(runs: list[Run]) -> tuple[list[str], list[list[Cell]]]:
    """Header and one row per run: the name, fractions (None where a run lacks the column), then n, failed and
    "yes" / "partial"."""
    bench = benchmarks.of_summary(runs[0][1], runs[0][0])
    heads = [dict(bench.headline(bench.read_summary(s))) for _, s in runs]  # each in the benchmark's own column order
    columns = [col for col in dict.fromkeys(c for h in heads for c in h) if any(h.get(col) is not None for h in heads)]
    header = ["model", *columns, *STATUS]
    rows: list[list[Cell]] = []
    for (name, s), values in zip(runs, heads, strict=True):
        status: list[Cell] = [str(s.get("scored", "")), str(s.get("failed", "")), _completeness(s)]
        rows.append([name, *(values.get(col) for col in columns), *status])
    return header, rows


def _completeness(summary: dict) -> str:
    return "partial" if summary.get("complete") is False else "yes" if summary.get("complete") else "unknown"


def notes(runs: list[Run]) -> list[str]:
    """Why some numbers are not comparable: different sets of groups, or incomplete runs."""
    bench = benchmarks.of_summary(runs[0][1], runs[0][0])
    out = []
    if len({frozenset(bench.scored_groups(bench.read_summary(s))) for _, s in runs}) > 1:
        out.append(f"the runs cover different {bench.group_field}s: overall numbers average over different sets")
    for name, s in runs:
        for reason in s.get("partial", []):
            out.append(f"{name} is partial: {reason}")
    return out


def _cell(value: Cell, digits: int = 1) -> str:
    return value if isinstance(value, str) else percent(value, digits=digits)


def render(runs: list[Run], fmt: str, diffs: dict | None = None, width: int = 80) -> str | list[Table]:
    """The comparison as rich Tables no wider than `width` (`table`: columns that do not fit go to a further
    table, so names and numbers are always whole), or Markdown / CSV text; with `diffs` (report/differences.py)
    Markdown gains the table of differences and CSV their columns (the terminal prints that table itself)."""
    header, rows = compare_rows(runs)
    if fmt == "table":
        shown = [[_cell(v) if i else str(v) for i, v in enumerate(row)] for row in rows]
        return fitted_tables(f"{runs[0][1]['benchmark']} (percent)", header, shown, width)
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


def chart_bars(runs: list[Run], diffs: dict | None = None) -> tuple[list[str], list[Bars]]:
    """The chart's groups (the benchmark's `chart_columns`, RM-Bench's overall levels; else every headline number)
    and each run's bars."""
    header, rows = compare_rows(runs)
    bench = benchmarks.of_summary(runs[0][1], runs[0][0])
    groups = [g for g in bench.chart_columns if g in header] or header[1 : -len(STATUS)]
    out = []
    for k, row in enumerate(rows):
        values = [
            100 * float(v) if isinstance(v, int | float) else math.nan for v in (row[header.index(g)] for g in groups)
        ]
        known = bench.headline_intervals(bench.read_summary(runs[k][1]))
        intervals = [(100 * known[g][0], 100 * known[g][1]) if g in known else (math.nan, math.nan) for g in groups]
        marks = diffs["differences"][k - 1] if diffs and k else {}
        labels = [
            "" if math.isnan(v) else f"{v:.1f}" + ("*" if marks.get(g, {}).get("significant") else "")
            for v, g in zip(values, groups, strict=True)
        ]
        out.append(Bars(str(row[0]), values, intervals, labels))
    return groups, out


def bar_chart(runs: list[Run], path: str | Path, diffs: dict | None = None) -> Path:
    """A grouped bar chart PNG of `chart_bars`: bars per model, each run's 95% interval as an error bar, `*` on a
    bar that differs significantly from the first run's (given `diffs`)."""
    import numpy as np

    plt = pyplot()

    groups, bars = chart_bars(runs, diffs)
    width = 0.8 / len(bars)
    x = np.arange(len(groups))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.5 + len(groups) * (0.4 + 0.35 * len(bars))), 4.8))
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
    ax.set_title(f"{runs[0][1]['benchmark']}: headline numbers")
    if diffs:
        note = f"error bars: 95% intervals; * differs from {diffs['reference']} (paired permutation test, p < 0.05)"
        fig.text(0.01, 0.01, note, fontsize=7, color="#555555")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=min(3, len(bars)), frameon=False)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=C.CHART_DPI)
    plt.close(fig)
    return out
