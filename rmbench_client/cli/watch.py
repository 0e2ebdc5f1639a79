"""`rmbench-client watch DIR --config C`: every new checkpoint under DIR served and evaluated as it is written
(rmbench_client/training/watcher.py), until Ctrl-C or SIGTERM (or one pass with --once)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..benchmarks import registry as benchmarks
from .values import seconds, seconds_or_zero

if TYPE_CHECKING:
    from rich.console import Console

    from ..report.trackers import Tracker


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("watch", parents=[common], help="evaluate every new checkpoint of a training run")
    p.add_argument("directory", metavar="DIR", help="the training run's output directory (one folder per checkpoint)")
    p.add_argument("--config", required=True, metavar="FILE", help="the evaluation YAML; its main role's serve "
                   "section serves each checkpoint")  # fmt: skip
    add_benchmarks_arguments(
        p,
        data="one folder per benchmark, as `data fetch` lays it out (default data/)",
        out="one directory per checkpoint and the table (default runs/<model>/watch)",
    )
    p.add_argument("--limit", type=int, metavar="N", help="score only the first N prompts of each benchmark")
    p.add_argument("--role", metavar="ROLE", help="the role the checkpoints are of (default: the run's main role)")
    p.add_argument("--poll", type=seconds, default=C.WATCH_POLL_S, metavar="S", help="seconds between looks for new "
                   f"checkpoints (default {C.WATCH_POLL_S:g})")  # fmt: skip
    p.add_argument("--settle", type=seconds_or_zero, default=C.WATCH_SETTLE_S, metavar="S", help="a checkpoint "
                   f"counts once nothing in it changed for S seconds (default {C.WATCH_SETTLE_S:g})")  # fmt: skip
    p.add_argument("--once", action="store_true", help="evaluate the complete checkpoints not yet done, then stop")
    add_tracker_arguments(p)


def add_benchmarks_arguments(p: argparse.ArgumentParser, data: str, out: str) -> None:
    """--benchmarks, --data and --out of the commands that run several benchmarks (suite, watch), with their own
    help for the last two."""
    p.add_argument("--benchmarks", metavar="A,B", help="only these benchmarks (default: every benchmark whose data "
                   f"is present; known: {', '.join(benchmarks.names())})")  # fmt: skip
    p.add_argument("--data", metavar="DIR", help=data)
    p.add_argument("--out", metavar="DIR", help=out)


def add_tracker_arguments(p: argparse.ArgumentParser) -> None:
    """--mlflow and --wandb (run, suite, watch): log each result to the tracker."""
    t = p.add_argument_group("trackers (off unless given)")
    t.add_argument("--mlflow", metavar="URI", help="log to MLflow at this tracking URI (file:./mlruns is a local "
                   "store); needs rmbench-client[mlflow]")  # fmt: skip
    t.add_argument("--wandb", metavar="PROJECT", help="log to this Weights & Biases project (WANDB_MODE=offline "
                   "writes the run's files only); needs rmbench-client[wandb]")  # fmt: skip
    if p.prog.split()[-1] != "watch":  # watch logs each checkpoint at its own step
        t.add_argument("--step", type=int, metavar="N", help="the x-axis value the trackers log the numbers at")


def trackers(args: argparse.Namespace) -> list[Tracker]:
    """The trackers the flags switch on."""
    from ..report.trackers import MLflowTracker, WandbTracker

    found: list[Tracker] = []
    if getattr(args, "mlflow", None):
        if args.mlflow.startswith("file:"):
            # MLflow 3 opens its file store only when allowed: the command line allows it for its own process (the
            # library's tracker never changes the environment of a process it is a guest in)
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        found.append(MLflowTracker(args.mlflow))
    if getattr(args, "wandb", None):
        found.append(WandbTracker(args.wandb))
    return found


def log_runs(args: argparse.Namespace, run_dirs: list[Path]) -> None:
    """`run` and `suite` with --mlflow / --wandb: each run directory's result to every tracker, at --step."""
    on = trackers(args)
    if not on:
        return
    from ..report.trackers import log_result, report_page
    from ..results.typed import load_result

    try:
        for run_dir in run_dirs:
            if (run_dir / C.SUMMARY_FILE).is_file():
                result = load_result(run_dir)
                page = report_page(result)  # once per run, whatever the number of trackers
                for tracker in on:
                    log_result(tracker, result, args.step, page)
    finally:
        for tracker in on:
            tracker.close()


EXIT_NOT_DONE = 1  # as `run` exits when a prompt is left unscored


def _terminate_as_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"interrupted by {signal.Signals(signum).name}")


def cmd_watch(args: argparse.Namespace, console: Console) -> int:
    """Exit 0 once every checkpoint tried is done, 1 when one was not evaluated to the end (it is tried again by
    the next watch)."""
    from ..config.loading import load_config
    from ..training.watcher import TABLE_MD, watch

    config = load_config(args.config)  # read here: its errors in the command line's words (the API says out=)
    names = [benchmarks.get(n.strip()).name for n in args.benchmarks.split(",")] if args.benchmarks else None
    on = trackers(args)
    # the command line's own process: SIGTERM ends the watch as Ctrl-C does (the servers it started are stopped);
    # a run that catches it writes its outputs first, then hands it here
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        rows = watch(args.directory, config, out=args.out, benchmarks=names, data_root=args.data,
                     limit=args.limit, role=args.role, trackers=on, poll=args.poll, settle=args.settle,
                     once=args.once)  # fmt: skip
    finally:
        signal.signal(signal.SIGTERM, previous)
        for tracker in on:
            tracker.close()
    if rows:
        sys.stdout.write((rows[0].directory.parent / TABLE_MD).read_text(encoding="utf-8"))
    else:
        sys.stderr.write(f"no complete checkpoint under {args.directory} yet\n")
    left = [r.checkpoint for r in rows if not r.done]
    if left:
        sys.stderr.write(f"not evaluated to the end: {', '.join(left)}; watch again to retry them\n")
        return EXIT_NOT_DONE
    return 0
