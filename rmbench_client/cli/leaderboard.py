"""`rmbench-client leaderboard DIR_OR_RUN...`: models as rows, benchmarks as columns, each cell the headline of the
latest complete run of that model on that benchmark (results/leaderboard.py), as a self-contained page, CSV or JSON
(report/leaderboard_page.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

DEFAULT_PAGE = "leaderboard.html"


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("leaderboard", parents=[common], help="models against benchmarks: every model's latest "
                       "complete run of each, as a sortable page, CSV or JSON")  # fmt: skip
    p.add_argument("paths", nargs="+", metavar="DIR_OR_RUN", help="run directories, or folders searched for runs "
                   "at any depth (runs/, a suite's directory)")  # fmt: skip
    p.add_argument("--out", metavar="FILE", help=f"where to write it (default: ./{DEFAULT_PAGE} for the page; CSV "
                   "and JSON to standard output)")  # fmt: skip
    p.add_argument("--format", choices=["html", "csv", "json"], default="html", help="the page (default), CSV (the "
                   "model, then one column per benchmark, in percent) or JSON (everything the page shows)")  # fmt: skip


def cmd_leaderboard(args: argparse.Namespace, console: Console) -> int:
    from ..report.leaderboard_page import render
    from ..results.leaderboard import leaderboard
    from ..results.run_directory import make_directory, reporting, write_atomic

    board = leaderboard(args.paths)
    out = Path(args.out) if args.out else Path(DEFAULT_PAGE) if args.format == "html" else None
    text = render(board, args.format, out)
    if out is None:
        sys.stdout.write(text)
    else:  # a directory that cannot be written: one error line, before anything else is said
        make_directory(out.parent, "the leaderboard's directory")
        with reporting(out.parent, f"writing {out.name}", "the leaderboard's directory"):
            write_atomic(out, text)
    for x in board.left_out:
        what = f" ({x.model} on {x.benchmark})" if x.model else ""
        sys.stderr.write(f"left out: {x.path}{what}: {x.kind}: {x.why}\n")
    for note in board.notes:
        sys.stderr.write(f"note: {note}\n")
    if out is not None:
        sys.stderr.write(f"leaderboard: {out} ({len(board.models)} model(s), {len(board.benchmarks)} benchmark(s), "
                         f"{len(board.cells)} number(s), {len(board.left_out)} run(s) left out)\n")  # fmt: skip
    return 0
