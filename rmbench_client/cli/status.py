"""`rmbench-client status RUN_DIR`: where a run stands, from its directory alone (no server is asked): running or
not, prompts scored of those the run has (its progress file while it scores), failures, and whether its result is
complete (and if not, why); a run that ended without writing its outputs is said to have, its earlier summary kept;
a summary.json it cannot read is named, with why, and status exits 1."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..config.loading import load_config
from ..errors import DataError
from ..results.run_directory import running_pid, unfinished, without_summary
from ..results.summary import RunSummary, load_summary

SUMMARY_KEYS = ("prompts", "scored", "failed", "complete", "partial", "aborted")  # what `status` repeats

if TYPE_CHECKING:
    from rich.console import Console


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()) if path.is_file() else 0


EXIT_UNREADABLE = 1  # the state was printed, but a summary.json in it cannot be read


def _summary(run_dir: Path) -> tuple[RunSummary | None, str | None]:
    """The run's summary, or None and why it cannot be read (a cut or foreign file: said, never taken for no
    summary); (None, None) where it has none (without_summary says why)."""
    try:
        return load_summary(run_dir / C.SUMMARY_FILE), None
    except FileNotFoundError:
        return None, None
    except (OSError, DataError) as exc:
        return None, f"{exc}; rerunning the run's command writes it again from the stored scores"


def run_dirs_in(model_dir: Path) -> list[Path]:
    """The run directories of a model's directory (runs/<model>: one per benchmark), by name."""
    if not model_dir.is_dir():
        return []
    return sorted(d for d in model_dir.iterdir() if (d / C.CONFIG_FILE).is_file())


def status(run_dir: Path) -> dict[str, Any]:
    """The run directory's state as a dict (what `status --json` prints)."""
    return _status(run_dir)[0]


def _status(run_dir: Path) -> tuple[dict[str, Any], RunSummary | None]:
    """The run directory's state, and its summary (None while there is none to read)."""
    if not (run_dir / C.CONFIG_FILE).is_file():
        inside = ", ".join(d.name for d in run_dirs_in(run_dir))
        hint = f"; its run directories: {inside}" if inside else ""
        raise DataError(f"{run_dir}: not a run directory (no {C.CONFIG_FILE}){hint}")
    cfg = load_config(run_dir / C.CONFIG_FILE)
    out: dict[str, Any] = {
        "run_dir": str(run_dir),
        "model": cfg.model,
        "benchmark": benchmarks.name_of(cfg.benchmark),
        "type": cfg.type,
    }
    pid = running_pid(run_dir)
    out["state"] = "running" if pid is not None else "not running"
    if pid is not None:
        out["pid"] = pid
    progress = (run_dir / C.PROGRESS_FILE).is_file()  # a run scoring now, or one that never wrote its outputs
    out["scored"] = _lines(run_dir / (C.PROGRESS_FILE if progress else C.SAMPLES_FILE))
    out["failed"] = 0 if progress else _lines(run_dir / C.FAILURES_FILE)
    if pid is None and (why := unfinished(run_dir) or without_summary(run_dir)):
        out["ended"] = why
    # beside a progress file the summary is an earlier run's: not this one's numbers ("ended" says so)
    summary, unreadable = (None, None) if progress else _summary(run_dir)
    if unreadable is not None:
        out["summary_error"] = unreadable
    if summary is not None:  # what the summary says, where it says it (an older one may not)
        out |= {k: getattr(summary.info, k) for k in SUMMARY_KEYS if k in summary.raw}
    return out, summary


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "status", parents=[common], help="progress, failures and completeness of a run directory, and its scores"
    )
    p.add_argument("run_dir", metavar="RUN_DIR", nargs="?",
                   help="a run directory (runs/<model>/<benchmark> or a run's --out), or a model's directory "
                   "(runs/<model>): each of its runs in a line or two")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--config", metavar="FILE", help="the replicas of this config's Ray roles, per node")


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    if args.config is not None:
        from ..config.loading import read_yaml
        from .cluster import print_replicas

        data = read_yaml(args.config)
        code = print_replicas(load_config(args.config, {} if "model" in data else {"model": "status"}), args.json)
        if args.run_dir is None:
            return code
    if args.run_dir is None:
        raise DataError("status needs a RUN_DIR (a run or model directory) or --config FILE (Ray replicas)")
    path = Path(args.run_dir)
    runs = run_dirs_in(path) if not (path / C.CONFIG_FILE).is_file() else []
    if runs:  # a model's directory: every benchmark's run, without their tables
        every = [status(d) for d in runs]
        if args.json:
            sys.stdout.write(json.dumps({"model_dir": str(path), "runs": every}) + "\n")
        else:
            sys.stdout.write("".join("\n".join(_lines_of(found, False)) + "\n" for found in every))
        return EXIT_UNREADABLE if any("summary_error" in found for found in every) else 0
    found, summary = _status(path)
    code = EXIT_UNREADABLE if "summary_error" in found else 0
    if args.json:
        sys.stdout.write(json.dumps(found) + "\n")
        return code
    table = found["state"] != "running" and summary is not None and bool(summary.info.scored)
    sys.stdout.write("\n".join(_lines_of(found, table)) + "\n")
    if table and summary is not None:
        from ..report.printing import print_summary

        print_summary(summary, title=f"{found['model']} on {found['benchmark']}", console=console)
    return code


def _lines_of(found: dict[str, Any], table: bool) -> list[str]:
    """A run's status lines; its completeness unless a `table` of the summary will show it."""
    state = found["state"] + (f" (pid {found['pid']})" if "pid" in found else "")
    of = f" of {found['prompts']}" if "prompts" in found else ""
    lines = [
        f"{found['run_dir']}: {found['model']} on {found['benchmark']} ({found['type']}), {state}",
        f"  scored {found['scored']}{of} prompts, {found['failed']} failed",
    ]
    if found["state"] == "running":
        lines.append("  in progress: the summary is written when the run ends")
    elif "ended" in found:
        lines.append(f"  {found['ended']}")
    elif "summary_error" in found:
        lines.append(f"  unreadable summary: {found['summary_error']}")
    elif "complete" in found and not table:  # the table says it otherwise
        lines.append("  complete" if found["complete"] else "  partial: " + "; ".join(found.get("partial", [])))
    return lines
