"""`rmbench-client compare`: several runs side by side, with the significance of their differences."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from .values import seed

if TYPE_CHECKING:
    from rich.console import Console


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    """`rmbench-client compare`: print the comparison; write the chart when asked. Suite directories: their table
    (one row per model), then each benchmark that two or more of them ran, compared as runs are."""
    from ..results.suite import per_benchmark, suite_dirs

    suites = suite_dirs(args.paths)
    if suites is None:
        return _compare_runs(args, console)
    from ..results.suite import markdown

    table, runs = per_benchmark(suites)
    sys.stdout.write(markdown(table))
    for name, paths in runs.items():
        sys.stdout.write(f"\n{name}:\n")
        sys.stdout.flush()
        chart = f"{Path(args.chart).with_suffix('')}-{name}.png" if args.chart else None
        _compare_runs(argparse.Namespace(**(vars(args) | {"paths": paths, "chart": chart})), console)
    return 0


def _compare_runs(args: argparse.Namespace, console: Console) -> int:
    from rich.console import Console

    from ..report import differences
    from ..report.compare import bar_chart, render
    from ..results.comparison import compared, load_runs, notes

    runs = load_runs(args.paths)
    diffs, why_not = compared(runs, seed=args.seed)
    out = render(runs, args.format, diffs, width=console.width)
    if isinstance(out, list):
        tested = diffs if diffs and differences.names(diffs) else None  # none: every number undefined
        for table in [*out, *(differences.tables(tested, console.width) if tested else [])]:
            console.print(table)
        if tested:
            console.print(differences.caption(tested), markup=False, highlight=False)
    else:
        sys.stdout.write(out)
    err = Console(stderr=True)
    for note in [*notes(runs), *why_not]:
        err.print(f"note: {note}", markup=False, highlight=False)
    if args.chart:
        err.print(f"chart: {bar_chart(runs, args.chart, diffs)}", markup=False, highlight=False)
    return 0


def add_compare_parser(subparsers: Any, common: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Register `compare` on the CLI's subparsers."""
    parents = [common] if common is not None else []
    p: argparse.ArgumentParser = subparsers.add_parser("compare", parents=parents, help="compare runs side by side")
    p.add_argument("paths", nargs="+", metavar="RUN_OR_SUMMARY",
                   help="run directories or summary.json files; or suite directories (runs/<model>)")  # fmt: skip
    p.add_argument("--format", choices=["table", "markdown", "csv"], default="table", help="output format")
    p.add_argument("--chart", metavar="PATH", help="also write a bar chart PNG here")
    p.add_argument(
        "--seed", type=seed, default=C.BOOTSTRAP_SEED, metavar="N", help="seed of the significance resampling"
    )
    return p
