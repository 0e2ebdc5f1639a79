"""`rmbench-client report`: one self-contained HTML page per run, or per comparison of several runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .. import constants as C

if TYPE_CHECKING:
    from rich.console import Console


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from rich.console import Console

    from ..report.page import write_report

    path, notes = write_report(args.paths, args.out, args.data, args.seed)
    size = path.stat().st_size / 1e6
    err = Console(stderr=True)
    for note in notes:
        err.print(f"note: {note}", markup=False, highlight=False)
    err.print(f"report: {path} ({size:.1f} MB)", markup=False, highlight=False)
    return 0


def add_report_parser(subparsers: Any, common: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Register `report` on the CLI's subparsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        parents=[common] if common is not None else [],
        help="write a self-contained HTML page of one run, or of several compared with the first",
    )
    p.add_argument("paths", nargs="+", metavar="RUN_DIR", help="run directories (the first is the reference)")
    p.add_argument(
        "--out", metavar="FILE", help=f"the page (default: RUN_DIR/{C.REPORT_FILE}; ./{C.REPORT_FILE} for several)"
    )
    p.add_argument("--data", metavar="PATH", help="dataset file or directory, for runs whose summary names none")
    p.add_argument(
        "--seed", type=int, default=C.BOOTSTRAP_SEED, metavar="N", help="seed of the significance resampling"
    )
    return p
