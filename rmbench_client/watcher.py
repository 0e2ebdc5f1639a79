"""`watch`: every checkpoint of a training run evaluated as it is written.

Each complete checkpoint under the watched directory (checkpoints.py says when one is) is served through `serve`
on the config with that checkpoint as its model path (`with_checkpoint`), and the suite's benchmarks (or those
named) run against it, into `<out>/<checkpoint>/<benchmark>`: one run directory per checkpoint and benchmark. A
checkpoint is done once `<out>/<checkpoint>/watch-done.json` is written (after its runs): a restarted watch skips
those, and a checkpoint it was evaluating resumes from its score store. `<out>` holds the table of every done
checkpoint's headlines: `watch.json`, `watch.md` and `watch.png` (headline against step, one line per benchmark,
95% intervals shaded), and `watch.jsonl`, one line per checkpoint evaluation. One watch at a time per `<out>`
(its lock). A baseline config (no server) is run without serving.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from . import constants as C
from .api import ConfigSource, evaluate_suite, load_config, with_checkpoint
from .atomic_write import replacing, write_atomic
from .checkpoints import Checkpoint, complete_checkpoints
from .config import RunConfig
from .errors import ConfigError
from .results import SuiteResult
from .run_directory import RunDirectory
from .serving import serve
from .trackers import Tracker

log = logging.getLogger(__name__)
DONE_FILE = "watch-done.json"
TABLE_JSON, TABLE_MD, TABLE_PNG, EVENTS = "watch.json", "watch.md", "watch.png", "watch.jsonl"


@dataclass(frozen=True)
class WatchRow:
    """One evaluated checkpoint: its name, step, directory and each benchmark's headline (value, low, high: None
    where there is none) and status (complete, partial, missing, error)."""

    checkpoint: str
    step: int | None
    directory: Path
    headlines: dict[str, dict[str, Any]]


def _row(ck: Checkpoint, suite: SuiteResult) -> dict[str, Any]:
    cells: dict[str, Any] = {}
    for name, r in suite.results.items():
        status = "complete" if r.complete else "partial"
        cells[name] = {"headline": r.headline_name, "value": r.headline.value, "low": r.headline.low,
                       "high": r.headline.high, "status": status}  # fmt: skip
    for name, why in {**suite.missing, **suite.errors}.items():
        cells[name] = {"status": "error" if name in suite.errors else "missing", "why": why}
    return {"checkpoint": ck.name, "step": ck.step, "path": str(ck.path), "directory": str(suite.directory),
            "results": cells}  # fmt: skip


def read_rows(out: Path) -> list[WatchRow]:
    """The done checkpoints under `out`, by step."""
    rows = []
    for done in sorted(out.glob(f"*/{DONE_FILE}")):
        with_rows = json.loads(done.read_text(encoding="utf-8"))
        rows.append(WatchRow(with_rows["checkpoint"], with_rows["step"], done.parent, with_rows["results"]))
    return sorted(rows, key=lambda r: (r.step is None, r.step or 0, r.checkpoint))


def _percent(cell: dict[str, Any]) -> str:
    if cell.get("value") is None:
        return str(cell.get("status", "–"))
    text = f"{100 * cell['value']:.1f}"
    if cell.get("low") is not None:
        text += f" [{100 * cell['low']:.1f}, {100 * cell['high']:.1f}]"
    return text + (" (partial)" if cell.get("status") == "partial" else "")


def write_table(out: Path, model: str, rows: Sequence[WatchRow]) -> None:
    """watch.json, watch.md and watch.png in `out` from the done checkpoints."""
    names = list(dict.fromkeys(n for r in rows for n in r.headlines))
    data = {
        "model": model,
        "benchmarks": names,
        "checkpoints": [
            {"checkpoint": r.checkpoint, "step": r.step, "directory": str(r.directory), "results": r.headlines}
            for r in rows
        ],
    }
    write_atomic(out / TABLE_JSON, json.dumps(data, indent=2) + "\n")
    lines = [f"| checkpoint | step | {' | '.join(names)} |", f"|---|---:|{'---:|' * len(names)}"]
    for r in rows:
        cells = [_percent(r.headlines.get(n, {})) for n in names]
        lines.append(f"| {r.checkpoint} | {'' if r.step is None else r.step} | {' | '.join(cells)} |")
    write_atomic(out / TABLE_MD, f"# {model}: headline per checkpoint (%, 95% interval)\n\n" + "\n".join(lines) + "\n")
    _chart(out / TABLE_PNG, model, names, rows)


def _chart(path: Path, model: str, names: Sequence[str], rows: Sequence[WatchRow]) -> None:
    from .benchmarks.shared.formatting import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name in names:
        points = [(r.step if r.step is not None else i, r.headlines.get(name, {})) for i, r in enumerate(rows)]
        points = [(x, c) for x, c in points if c.get("value") is not None]
        if not points:
            continue
        xs = [x for x, _ in points]
        ax.plot(xs, [100 * c["value"] for _, c in points], marker="o", label=f"{name} ({points[0][1]['headline']})")
        banded = [(x, c) for x, c in points if c.get("low") is not None]
        if banded:
            lows = [100 * c["low"] for _, c in banded]
            highs = [100 * c["high"] for _, c in banded]
            ax.fill_between([x for x, _ in banded], lows, highs, alpha=0.15)
    ax.set_xlabel("step")
    ax.set_ylabel("headline (%)")
    ax.set_title(f"{model}: headline per checkpoint (95% intervals shaded)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        with replacing(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110)
    finally:
        plt.close(fig)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"interrupted by {signal.Signals(signum).name}")


@contextmanager
def _terminate_interrupts() -> Iterator[None]:
    """SIGTERM ends the watch as Ctrl-C does (the servers it started are stopped); set again for each checkpoint,
    as a run puts the default back when it ends. Only in the main thread, where signals are handled."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def evaluate_checkpoint(
    cfg: RunConfig, ck: Checkpoint, out: Path, role: str | None, repo_root: str | Path | None, **options: Any
) -> SuiteResult:
    """Serve one checkpoint (a baseline: nothing to serve) and run the benchmarks against it."""
    if cfg.type == "baseline":
        return evaluate_suite(cfg, out=out / ck.name, step=ck.step, **options)
    served = with_checkpoint(cfg, ck.path, role=role)
    roles = [r for r in served.roles_used() if served.roles[r].serve is not None]
    with serve(served, roles=roles, repo_root=repo_root) as servers:
        return evaluate_suite(servers.config, out=out / ck.name, step=ck.step, **options)


def watch(
    directory: str | Path,
    config_source: ConfigSource,
    *,
    out: str | Path | None = None,
    benchmarks: Sequence[str] | None = None,
    data_root: str | Path | None = None,
    limit: int | None = None,
    role: str | None = None,
    repo_root: str | Path | None = None,
    trackers: Sequence[Tracker] = (),
    poll: float = C.WATCH_POLL_S,
    settle: float = C.WATCH_SETTLE_S,
    once: bool = False,
    stop: Callable[[], bool] | None = None,
) -> list[WatchRow]:
    """Evaluate every complete checkpoint under `directory` that is not done yet, oldest step first, then look
    again every `poll` seconds; return the table's rows when `stop()` says so, or at once after one pass with
    `once`. `out` defaults to runs/<model>/watch; `role` is the role the checkpoints are of (default the run's main
    one); `benchmarks`, `data_root` and `limit` are `evaluate_suite`'s. Trackers log each checkpoint at its step.

    Raises:
        ConfigError: the directory does not exist, or the config cannot serve a checkpoint.
        RunLockedError: another watch writes into `out`.
        ServerError: a checkpoint's server could not be started (the others are not tried).
    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"{root}: no such directory to watch")
    cfg = load_config(config_source)
    if cfg.type != "baseline":
        with_checkpoint(cfg, root, role=role)  # refused now, not at the first checkpoint
    target = Path(out) if out is not None else Path(C.RUNS_DIR) / cfg.model.replace("/", "_") / "watch"
    options = {"benchmarks": benchmarks, "data_root": data_root, "limit": limit, "trackers": trackers}
    with RunDirectory(target):
        while True:
            done = {r.checkpoint for r in read_rows(target)}
            for ck in complete_checkpoints(root, settle):
                if ck.name in done:
                    continue
                log.info("evaluating checkpoint %s (step %s)", ck.name, ck.step)
                with _terminate_interrupts():
                    suite = evaluate_checkpoint(cfg, ck, target, role, repo_root, **options)
                write_atomic(suite.directory / DONE_FILE, json.dumps(_row(ck, suite), indent=2) + "\n")
                with (target / EVENTS).open("a", encoding="utf-8") as events:
                    events.write(json.dumps({"checkpoint": ck.name, "step": ck.step, "time": time.time()}) + "\n")
                write_table(target, cfg.model, read_rows(target))
            if once or (stop is not None and stop()):
                return read_rows(target)
            with _terminate_interrupts():
                time.sleep(poll)


__all__ = ["WatchRow", "read_rows", "watch"]
