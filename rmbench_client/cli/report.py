"""`rmbench-client report`: one self-contained HTML page per run, or per comparison of several runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from .values import seed

if TYPE_CHECKING:
    from rich.console import Console


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """One page; for suite directories one page per benchmark: in its run directory for one suite, else
    report-<benchmark>.html in --out (a directory; default .) comparing the suites that scored it."""
    from rich.console import Console

    from ..report.page import write_report
    from ..results.suite import per_benchmark, suite_dirs

    suites = suite_dirs(args.paths)
    if suites is None:
        pages = [(args.paths, args.out)]
    else:
        _, runs = per_benchmark(suites)
        folder = Path(args.out or ".")
        pages = [(paths, None if len(suites) == 1 else folder / f"report-{name}.html") for name, paths in runs.items()]
    err = Console(stderr=True)
    for paths, out in pages:
        path, notes = write_report(paths, out, args.data, args.seed)
        size = path.stat().st_size / 1e6
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
    what = "run directories (the first is the reference), or suite directories (runs/<model>)"
    p.add_argument("paths", nargs="+", metavar="RUN_DIR", help=what)
    p.add_argument(
        "--out",
        metavar="FILE",
        help=f"the page (default: RUN_DIR/{C.REPORT_FILE}; ./{C.REPORT_FILE} for several; for several "
        "suites, the directory of one report-<benchmark>.html each)",
    )
    p.add_argument("--data", metavar="PATH", action="append",
                   help="dataset file or directory, for runs whose summary names none (or no longer holds what "
                   "they scored); once per run, in their order, for runs on versions of one file")  # fmt: skip
    p.add_argument(
        "--seed", type=seed, default=C.BOOTSTRAP_SEED, metavar="N", help="seed of the significance resampling"
    )
    return p
