"""`watch`: every checkpoint of a training run evaluated as it is written, each to the end.

Each complete checkpoint under the watched directory (checkpoints.py says when one is) is served through `serve`
on the config with that checkpoint as its model path (`with_checkpoint`), and the suite's benchmarks (or those
named) run against it, into `<out>/<checkpoint>/<benchmark>`: one run directory per checkpoint and benchmark.

A checkpoint is done once every benchmark's run went to its end with every prompt scored (status complete or
partial); then `<out>/<checkpoint>/watch-done.json` is written. One whose evaluation was aborted (its server failed
mid-run, a signal) or left prompts unscored is not done: `watch-tried.json` says how it went, it is evaluated again
on the next pass and after a restart (each run resumes from its score store, so only what is missing is sent), its
numbers are not in the chart, and `watch` reports it (`WatchRow.done`; the command's exit code 1). A restarted
watch skips the done checkpoints. `<out>` holds the table of the checkpoints tried: `watch.json`, `watch.md` and
`watch.png` (headline against step for the done ones, one line per benchmark, 95% intervals shaded), and
`watch.jsonl`, one line per checkpoint evaluation. One watch at a time per `<out>` (its lock). A baseline config
(no server) is run without serving. Signals stay the caller's, as in `evaluate`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from .. import arguments
from .. import constants as C
from ..api import ConfigSource, evaluate_suite, load_config, with_checkpoint
from ..atomic_write import replacing, write_atomic
from ..config.schema import RunConfig, model_folder_problem
from ..errors import ConfigError, DataError
from ..report.trackers import Tracker
from ..results.run_directory import RunDirectory
from ..results.stamp import Origin, call_text, made_by
from ..results.suite import data_root_dir
from ..results.typed import Estimate, RunInterrupted, Status, SuiteResult
from ..run.interrupts import hand_on, held_for_later
from .checkpoints import Checkpoint, complete_checkpoints
from .serving import serve

log = logging.getLogger(__name__)
DONE_FILE = "watch-done.json"
TRIED_FILE = "watch-tried.json"  # a checkpoint evaluated, not yet to the end
TABLE_JSON, TABLE_MD, TABLE_PNG, EVENTS = "watch.json", "watch.md", "watch.png", "watch.jsonl"
CellStatus = Status | Literal["missing", "error"]
WHOLE = ("complete", "partial", "missing")  # a benchmark's outcome that needs no second try (missing: no data)


@dataclass(frozen=True)
class WatchCell:
    """One benchmark at one checkpoint: its `status` (a run's complete, partial, failed or aborted, aborted also for
    one whose data is there but that the suite was stopped before; missing: no data; error: its data refused), its
    headline (name and estimate) where it has one, and why it is not complete."""

    status: CellStatus
    headline_name: str | None = None
    headline: Estimate | None = None
    why: str | None = None


@dataclass(frozen=True)
class WatchRow:
    """One checkpoint tried: its name, step, directory, each benchmark's cell, and whether it is `done` (every
    benchmark's run went to its end with every prompt scored: it is not evaluated again)."""

    checkpoint: str
    step: int | None
    directory: Path
    results: Mapping[str, WatchCell]
    done: bool


class _Cell(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A cell as the files hold it (fractions; `value` None where there is no number)."""

    status: str
    headline: str | None = None
    value: float | None = None
    low: float | None = None
    high: float | None = None
    why: str | None = None


class _Row(msgspec.Struct, kw_only=True):
    checkpoint: str
    step: int | None
    path: str = ""
    directory: str = ""
    results: dict[str, _Cell] = {}
    done: bool = True  # a row written before `done` existed was written only when done


def _cells(suite: SuiteResult) -> dict[str, _Cell]:
    """The row's cells; a benchmark the suite never ran (stopped before it) is aborted, to be tried again, not
    missing (no data: never tried again)."""
    cells = {}
    for name, r in suite.results.items():
        why = "; ".join(r.partial) if r.status != "complete" else None
        cells[name] = _Cell(status=r.status, headline=r.headline_name, value=r.headline.value, low=r.headline.low,
                            high=r.headline.high, why=(r.aborted or why))  # fmt: skip
    for status, whys in (("missing", suite.missing), ("aborted", suite.not_run), ("error", suite.errors)):
        cells |= {name: _Cell(status=status, why=why) for name, why in whys.items()}
    return cells


def _typed(row: _Row, directory: Path) -> WatchRow:
    cells = {}
    for name, c in row.results.items():
        estimate = Estimate(c.value, c.low, c.high) if c.headline is not None else None
        status: Any = c.status
        cells[name] = WatchCell(status, c.headline, estimate, c.why)
    return WatchRow(row.checkpoint, row.step, directory, cells, row.done)


def read_rows(out: Path) -> list[WatchRow]:
    """The checkpoints tried under `out` (done or not), by step."""
    rows = []
    for folder in sorted(p for p in out.iterdir() if p.is_dir()) if out.is_dir() else []:
        for name in (DONE_FILE, TRIED_FILE):
            file = folder / name
            if file.is_file():
                try:
                    row = msgspec.json.decode(file.read_bytes(), type=_Row)
                except msgspec.DecodeError as exc:
                    raise DataError(f"{file}: not a watch row ({exc})") from None
                rows.append(_typed(row, folder))
                break
    return sorted(rows, key=lambda r: (r.step is None, r.step or 0, r.checkpoint))


def _shown(cell: WatchCell | None) -> Estimate | None:
    """The cell's headline where it is a result (its run went to its end: complete or partial), else None."""
    if cell is None or cell.status not in ("complete", "partial") or cell.headline is None:
        return None
    return cell.headline if cell.headline.value is not None else None


def _percent(cell: WatchCell | None) -> str:
    h = _shown(cell)
    if cell is None:
        return "–"
    if h is None or h.value is None:
        return f"{cell.status} (retried)" if cell.status in ("failed", "aborted", "error") else cell.status
    text = f"{100 * h.value:.1f}"
    if h.low is not None and h.high is not None:
        text += f" [{100 * h.low:.1f}, {100 * h.high:.1f}]"
    return text + (" (partial)" if cell.status == "partial" else "")


def _cell_json(cell: WatchCell) -> dict[str, Any]:
    h = cell.headline
    found = _Cell(status=cell.status, headline=cell.headline_name, value=h.value if h else None,
                  low=h.low if h else None, high=h.high if h else None, why=cell.why)  # fmt: skip
    return msgspec.to_builtins(found)  # type: ignore[no-any-return]


def write_table(out: Path, model: str, rows: Sequence[WatchRow]) -> None:
    """watch.json, watch.md and watch.png in `out` from the checkpoints tried (only results are plotted)."""
    names = list(dict.fromkeys(n for r in rows for n in r.results))
    data = {
        "model": model,
        "benchmarks": names,
        "checkpoints": [
            {
                "checkpoint": r.checkpoint,
                "step": r.step,
                "directory": str(r.directory),
                "done": r.done,
                "results": {n: _cell_json(c) for n, c in r.results.items()},
            }  # fmt: skip
            for r in rows
        ],
    }
    write_atomic(out / TABLE_JSON, json.dumps(data, indent=2) + "\n")
    lines = [f"| checkpoint | step | {' | '.join(names)} |", f"|---|---:|{'---:|' * len(names)}"]
    for r in rows:
        cells = [_percent(r.results.get(n)) for n in names]
        lines.append(f"| {r.checkpoint} | {'' if r.step is None else r.step} | {' | '.join(cells)} |")
    title = f"# {model}: headline per checkpoint (%, 95% interval)\n\n"
    write_atomic(out / TABLE_MD, title + "\n".join(lines) + "\n")
    _chart(out / TABLE_PNG, model, names, rows)


def _chart(path: Path, model: str, names: Sequence[str], rows: Sequence[WatchRow]) -> None:
    from ..benchmarks.shared.formatting import figure

    fig = figure(figsize=(7.0, 4.2))
    ax = fig.subplots()
    for name in names:
        points = []  # (step, headline %, low %, high %)
        for i, r in enumerate(rows):
            h = _shown(r.results.get(name))
            if h is not None and h.value is not None:
                low, high = (h.low, h.high) if h.low is not None and h.high is not None else (h.value, h.value)
                points.append((r.step if r.step is not None else i, 100 * h.value, 100 * low, 100 * high))
        if not points:
            continue
        label = f"{name} ({next(r.results[name].headline_name for r in rows if _shown(r.results.get(name)))})"
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        ax.fill_between([p[0] for p in points], [p[2] for p in points], [p[3] for p in points], alpha=0.15)
    ax.set_xlabel("step")
    ax.set_ylabel("headline (%)")
    ax.set_title(f"{model}: headline per checkpoint (95% intervals shaded)")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    with replacing(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)


def evaluate_checkpoint(
    cfg: RunConfig, ck: Checkpoint, out: Path, role: str | None, repo_root: str | Path | None,
    noted: list[signal.Signals], **options: Any,
) -> SuiteResult:  # fmt: skip
    """Serve one checkpoint (a baseline: nothing to serve) and run the benchmarks against it. A signal that stops
    the suite is noted in `noted`, for the watch to hand on once the checkpoint's server is stopped and its row
    written (`held_for_later`)."""
    with contextlib.ExitStack() as stack:
        if cfg.type != "baseline":  # a baseline: nothing to serve
            served = with_checkpoint(cfg, ck.path, role=role)
            roles = [r for r in served.roles_used() if served.roles[r].serve is not None]
            cfg = stack.enter_context(serve(served, roles=roles, repo_root=repo_root)).config
        # inside the servers' block: the caller's handlers are back before its servers stop
        caught = stack.enter_context(held_for_later(options["handle_signals"]))
        try:
            return evaluate_suite(cfg, out=out / ck.name, step=ck.step, **options)
        finally:
            noted.extend(caught)


def _record(target: Path, ck: Checkpoint, suite: SuiteResult) -> WatchRow:
    """The checkpoint's row, written where a restart finds it: done, or tried (to be evaluated again)."""
    cells = _cells(suite)
    done = all(c.status in WHOLE for c in cells.values())
    row = _Row(checkpoint=ck.name, step=ck.step, path=str(ck.path), directory=str(suite.directory), results=cells,
               done=done)  # fmt: skip
    folder = suite.directory
    text = msgspec.json.format(msgspec.json.encode(row)).decode() + "\n"
    write_atomic(folder / (DONE_FILE if done else TRIED_FILE), text)
    if done:
        (folder / TRIED_FILE).unlink(missing_ok=True)
    with (target / EVENTS).open("a", encoding="utf-8") as events:
        line = {"checkpoint": ck.name, "step": ck.step, "done": done, "time": time.time(),
                "status": {n: c.status for n, c in cells.items()}}  # fmt: skip
        events.write(json.dumps(line) + "\n")
    return _typed(row, folder)


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
    trackers: Sequence[Tracker] | Tracker = (),
    poll: float = C.WATCH_POLL_S,
    settle: float = C.WATCH_SETTLE_S,
    once: bool = False,
    stop: Callable[[], bool] | None = None,
    handle_signals: bool = True,
) -> list[WatchRow]:
    """Evaluate every complete checkpoint under `directory` that is not done yet, oldest step first, then look
    again every `poll` seconds; return the table's rows when `stop()` says so, at once after one pass with `once`,
    or after a checkpoint a signal stopped (SIGTERM's preemption: the caller's handler was called and returned). A
    checkpoint whose evaluation did not go to its end is evaluated again on the next pass (its row's `done` is false
    until then). `out` defaults to runs/<model>/watch; `role` is the role the checkpoints are of (default the run's
    main one); `benchmarks`, `data_root`, `limit` and `handle_signals` are `evaluate_suite`'s. Trackers log each
    checkpoint at its step.

    Raises:
        ConfigError: the directory does not exist, the config cannot serve a checkpoint, `poll` is 0 or less, or
            `settle` is below 0.
        DataError: a benchmark named has no data under `data_root`.
        RunLockedError: another watch writes into `out`.
        ServerError: a checkpoint's server could not be started (the others are not tried).
    """
    arguments.flags(once=once, handle_signals=handle_signals)
    arguments.seconds(poll=poll, settle=settle)
    if stop is not None and not callable(stop):
        raise TypeError(f"stop= must be a function (True: stop) or None, not {stop!r}")
    names = arguments.benchmark_names(benchmarks)  # an unknown one: now, not at the first checkpoint
    given, limit = arguments.trackers(trackers), arguments.limit(limit)  # refused now, not at the first checkpoint
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"{root}: {'not a directory' if root.exists() else 'no such directory'} to watch")
    if not (0 < poll < math.inf and 0 <= settle < math.inf):  # a poll of 0 would spin, a negative one raise later
        raise ConfigError(f"poll={poll!r}, settle={settle!r}: poll is seconds above 0, settle seconds from 0")
    cfg = load_config(config_source)
    if out is None and (problem := model_folder_problem(cfg.model)):
        raise ConfigError(problem)
    if cfg.type != "baseline":
        with_checkpoint(cfg, root, role=role)  # refused now, not at the first checkpoint
    data_root_dir(data_root, names or cfg.benchmarks)  # refused now, not at the first checkpoint
    target = Path(out) if out is not None else Path(C.RUNS_DIR) / cfg.model.replace("/", "_") / "watch"
    options = {"benchmarks": names, "data_root": data_root, "limit": limit, "trackers": given,
               "handle_signals": handle_signals}  # fmt: skip
    call = call_text("watch", directory, config_source, out=out, benchmarks=benchmarks, data_root=data_root,
                     limit=limit, role=role, once=once)  # fmt: skip
    with RunDirectory(target), made_by(Origin(call=call)):  # the stamp of every checkpoint's results
        while True:
            done = {r.checkpoint for r in read_rows(target) if r.done}
            for ck in complete_checkpoints(root, settle):
                if ck.name in done:
                    continue
                log.info("evaluating checkpoint %s (step %s)", ck.name, ck.step)
                noted: list[signal.Signals] = []
                suite = evaluate_checkpoint(cfg, ck, target, role, repo_root, noted, **options)
                row = _record(target, ck, suite)
                if not row.done:
                    log.warning("checkpoint %s not evaluated to the end (%s): tried again on the next pass", ck.name,
                                ", ".join(f"{n} {c.status}" for n, c in row.results.items()))  # fmt: skip
                write_table(target, cfg.model, read_rows(target))
                if noted:  # the row written (and the server stopped): now the caller's handler gets the signal
                    hand_on(noted[0], RunInterrupted(noted[0], suite.directory, suite))
                if suite.interrupted_by is not None:  # the caller's handler returned: a preempted job ends here
                    log.warning("%s stopped checkpoint %s: watch ends", suite.interrupted_by.name, ck.name)
                    return read_rows(target)
            if once or (stop is not None and stop()):
                return read_rows(target)
            time.sleep(poll)


__all__ = ["WatchCell", "WatchRow", "read_rows", "watch"]
