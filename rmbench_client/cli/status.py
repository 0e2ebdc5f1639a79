"""`rmbench-client status RUN_DIR`: where a run stands, from its directory alone (no server is asked): running or
not, prompts scored of those the run has, failures, and whether its result is complete (and if not, why)."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..config import load_config
from ..errors import DataError

if TYPE_CHECKING:
    from rich.console import Console


def _running(run_dir: Path) -> int | None:
    """The pid of the run holding the directory's lock, or None."""
    lock = run_dir / C.LOCK_FILE
    if not lock.is_file():
        return None
    with open(lock, encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = f.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(f, fcntl.LOCK_UN)
    return None


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()) if path.is_file() else 0


def _summary(run_dir: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        summary = json.loads((run_dir / C.SUMMARY_FILE).read_text(encoding="utf-8"))
        return summary if isinstance(summary, dict) else None
    return None


def status(run_dir: Path) -> dict[str, Any]:
    """The run directory's state as a dict (what `status --json` prints)."""
    if not (run_dir / C.CONFIG_FILE).is_file():
        raise DataError(f"{run_dir}: not a run directory (no {C.CONFIG_FILE})")
    cfg = load_config(run_dir / C.CONFIG_FILE)
    out: dict[str, Any] = {"run_dir": str(run_dir), "model": cfg.model, "benchmark": cfg.benchmark, "type": cfg.type}
    pid = _running(run_dir)
    out["state"] = "running" if pid is not None else "not running"
    if pid is not None:
        out["pid"] = pid
    out["scored"] = _lines(run_dir / C.SAMPLES_FILE)
    out["failed"] = _lines(run_dir / C.FAILURES_FILE)
    summary_file = run_dir / C.SUMMARY_FILE
    if summary_file.is_file():
        with contextlib.suppress(ValueError):
            summary = json.loads(summary_file.read_text(encoding="utf-8"))
            out |= {
                k: summary[k] for k in ("prompts", "scored", "failed", "complete", "partial", "aborted") if k in summary
            }
    return out


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "status", parents=[common], help="progress, failures and completeness of a run directory, and its scores"
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<model>/<benchmark> or a run's --out)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    found = status(Path(args.run_dir))
    if args.json:
        sys.stdout.write(json.dumps(found) + "\n")
        return 0
    state = found["state"] + (f" (pid {found['pid']})" if "pid" in found else "")
    of = f" of {found['prompts']}" if "prompts" in found else ""
    lines = [
        f"{found['run_dir']}: {found['model']} on {found['benchmark']} ({found['type']}), {state}",
        f"  scored {found['scored']}{of} prompts, {found['failed']} failed",
    ]
    summary = _summary(Path(args.run_dir))
    table = found["state"] != "running" and summary is not None and bool(summary.get("scored"))
    if found["state"] == "running":
        lines.append("  in progress: the summary is written when the run ends")
    elif "complete" in found and not table:  # the table says it otherwise
        lines.append("  complete" if found["complete"] else "  partial: " + "; ".join(found.get("partial", [])))
    sys.stdout.write("\n".join(lines) + "\n")
    if table and summary is not None:
        from ..report.table import print_summary

        print_summary(summary, title=f"{found['model']} on {found['benchmark']}", console=console)
    return 0
