"""How compare's paired differences (results/comparison.py) are shown: terminal tables, Markdown, CSV columns, and the
report page's JSON.

Differences are in percent points: `+3.2 [1.0, 5.1] p=0.004 *` = run minus first run, the paired bootstrap 95%
interval, the paired permutation test's p-value, and `*` when p < 0.05.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ..benchmarks.shared.formatting import fitted_tables
from ..results.comparison import Difference, PairedDifferences


def cell(d: Difference | None) -> str:
    """'+3.2 [1.0, 5.1] p=0.004 *' (percent points); '' without a value."""
    if d is None:
        return ""
    mark = " *" if d.significant else ""
    return f"{100 * d.value:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}] {p_text(d.p)}{mark}"


def p_text(p: float) -> str:
    """'p=0.03'; 'p<0.001' below that (the permutation test's resolution is 1/5001)."""
    return "p<0.001" if p < 0.001 else f"p={p:.2g}"


def names(result: PairedDifferences) -> list[str]:
    """The headline numbers compared, in the benchmark's order."""
    return list(dict.fromkeys(n for diffs in result.differences for n in diffs))


def caption(result: PairedDifferences) -> str:
    runs = [result.reference, *result.runs]
    left = [f"{run}: {k}" for run, k in zip(runs, result.left_out, strict=True) if k]
    text = (
        f"difference against {result.reference} in percent points, over the {result.shared} prompts every run "
        "scored; [95% paired bootstrap interval]; p: paired permutation test; * p < 0.05"
    )
    return text + (f"; left out (scored by only some runs): {', '.join(left)}" if left else "")


def tables(result: PairedDifferences, width: int = 80) -> list[Table]:
    """One row per headline number, one column per run compared with the first (further tables where the runs do
    not fit in `width`); `caption(result)` says what the cells are (printed under them: a table's caption would
    fold a long model name at the table's width)."""
    header = ["number", *result.runs]
    rows = [[name, *(cell(d.get(name)) for d in result.differences)] for name in names(result)]
    return fitted_tables(f"differences against {result.reference}", header, rows, width)


def markdown(result: PairedDifferences) -> str:
    lines = [
        "",
        f"Differences against {result.reference} ({caption(result).split(' in ', 1)[1]})",
        "",
        "| number | " + " | ".join(r.replace("|", "\\|") for r in result.runs) + " |",
        "| --- |" + " ---: |" * len(result.runs),
    ]
    for name in names(result):
        lines.append(f"| {name} | " + " | ".join(cell(d.get(name)) or "–" for d in result.differences) + " |")
    return "\n".join(lines) + "\n"


CSV_FIELDS = ("diff", "low", "high", "p", "significant")


def csv_header(result: PairedDifferences) -> list[str]:
    """Extra CSV columns: for every headline number its difference against the first run (percent points), the
    interval, p and "yes"/"no"; then the number of shared prompts."""
    return [f"{name} {field}" for name in names(result) for field in CSV_FIELDS] + ["shared prompts"]


def csv_cells(result: PairedDifferences, run_index: int) -> list[str]:
    """The extra cells of run `run_index` (empty for the first run: the reference)."""
    if run_index == 0:
        return [""] * (len(names(result)) * len(CSV_FIELDS)) + [str(result.shared)]
    diffs = result.differences[run_index - 1]
    cells: list[str] = []
    for name in names(result):
        d = diffs.get(name)
        if d is None:
            cells += [""] * len(CSV_FIELDS)
            continue
        yes = "yes" if d.significant else "no"
        cells += [f"{100 * d.value:.2f}", f"{100 * d.low:.2f}", f"{100 * d.high:.2f}", f"{d.p:.4g}", yes]
    return cells + [str(result.shared)]


def page_json(result: PairedDifferences) -> dict[str, Any]:
    """The differences as the report page reads them (report/assets/report.js): fractions, by run after the first,
    {number: {"diff", "ci", "p", "significant"}}."""
    return {
        "shared": result.shared,
        "left_out": list(result.left_out),
        "differences": [
            {
                name: {"diff": d.value, "ci": [d.low, d.high], "p": d.p, "significant": d.significant}
                for name, d in run.items()
            }
            for run in result.differences
        ],  # fmt: skip
        "reference": result.reference,
        "runs": list(result.runs),
    }
