"""`rmbench-client suite`: every benchmark whose data is present (or those named with --benchmarks) against the same
servers, one run directory per benchmark under the model's directory, and `suite.md` / `suite.json` there."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..benchmarks import registry as benchmarks
from ..config.schema import RunConfig
from ..errors import DataError
from ..results.suite import Planned
from .run import EXIT_INCOMPLETE, add_run_arguments, config, dry_run, interrupted_line
from .watch import log_runs

if TYPE_CHECKING:
    from rich.console import Console


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "suite", parents=[common], help="every benchmark whose data is present, and the model-card table of them"
    )
    add_run_arguments(p, suite=True)


def cmd_suite(args: argparse.Namespace, console: Console) -> int:
    from ..api import run_config  # the Python API's run
    from ..results.suite import SUITE_MD, model_dir, plan_suite, run_suite
    from ..run.interrupts import EXIT_INTERRUPTED, Interrupted

    names = [benchmarks.get(n.strip()).name for n in args.benchmarks.split(",")] if args.benchmarks else None
    root = args.data
    base = config(argparse.Namespace(**(vars(args) | {"data": None})))
    if args.dry_run:
        return suite_dry_run(plan_suite(base, names, root), args.json, args.fresh)
    ended: dict[str, Any] = {}

    def run_one(cfg: RunConfig) -> str | None:
        sys.stderr.write(f"{benchmarks.name_of(cfg.benchmark)}: running\n")
        progress = not args.no_progress and not args.json
        try:
            result, ended["signal"] = run_config(cfg, fresh=args.fresh, progress=progress, heatmaps=args.heatmaps)
        except DataError as exc:  # before its run directory was made: none is named (the table says why)
            sys.stderr.write(f"{benchmarks.name_of(cfg.benchmark)}: not run: {exc}\n")
            raise
        except Interrupted as exc:  # the suite's table is still written from the runs that ended before
            sys.stderr.write(interrupted_line(exc, str(cfg.out_dir())))
            ended["signal"] = exc.signal
            return f"{exc} before it began"
        sys.stderr.write(f"{benchmarks.name_of(cfg.benchmark)}: {cfg.out_dir()}\n")
        if not result.all_scored:
            ended["incomplete"] = True
            why = result.aborted or f"{len(result.failures)} prompt(s) not scored"
            sys.stderr.write(f"{benchmarks.name_of(cfg.benchmark)}: incomplete ({why}); rerun the suite to resume\n")
        return None

    def stopped() -> str | None:  # interrupted: the other benchmarks are left for the next suite run
        sig = ended.get("signal")
        return f"interrupted by {sig.name}" if sig is not None else None

    suite, _ = run_suite(base, names, root, run_one, stopped)
    if args.json:
        sys.stdout.write(json.dumps(suite) + "\n")
    else:
        sys.stdout.write((model_dir(base) / SUITE_MD).read_text(encoding="utf-8"))
    sys.stderr.write(f"suite directory: {model_dir(base)}\n")
    log_runs(args, [model_dir(base) / name for name in suite["benchmarks"]])
    if ended.get("signal") is not None:
        return EXIT_INTERRUPTED[ended["signal"]]
    errors = any(c["status"] == "error" for c in suite["results"].values())
    return EXIT_INCOMPLETE if ended.get("incomplete") or errors else 0


def suite_dry_run(planned: list[Planned], as_json: bool, fresh: bool) -> int:
    """Each benchmark's `run --dry-run`, or why it is missing; --json: one object keyed by benchmark."""
    from ..run.planning import plan

    if as_json:
        found = {p.name: plan(p.cfg, fresh) if p.cfg is not None else {"missing": p.missing} for p in planned}
        sys.stdout.write(json.dumps(found) + "\n")
        return 0
    for p in planned:
        if p.cfg is None:
            sys.stdout.write(f"{p.name}: {p.missing}\n")
        else:
            dry_run(p.cfg, as_json=False, fresh=fresh)
    return 0
