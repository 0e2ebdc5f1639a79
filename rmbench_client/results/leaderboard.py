"""The leaderboard: models as rows, benchmarks as columns, each cell one run's headline number (the benchmark's
`leading` number, as `suite` shows it) with its 95% interval.

Runs are the run directories given, and every directory holding a `summary.json` under the folders given, at any
depth; a reproduction (its stamp names the run it re-ran: `reproduce`) is a check of another run, never a cell. Of
one model's runs of one benchmark the cell is the latest complete one (latest by its stamp's time written; a run
from before stamps by its summary file's time, which the cell says), and it says how many others there were. A
model with no complete run of a benchmark has an empty cell, never a 0 and never a partial number: its partial,
failed or aborted runs are listed as left out, with why. Rows are in the order of the models' names, columns in the
registry's order of benchmarks; where one model's cells are runs of different checkpoints (their fingerprints
differ), a note says so.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from .. import constants as C
from ..benchmarks import registry
from ..errors import DataError
from .agreement import within
from .summary import RunSummary, load_summary


@dataclass(frozen=True)
class Found:
    """One run found: its directory, its summary, and when it was written (seconds since the epoch), by its stamp
    or, for a run from before stamps, by its summary file's time (`dated_by`)."""

    path: Path
    summary: RunSummary
    when: float
    dated_by: str  # "stamp" | "file"

    @property
    def model(self) -> str:
        return self.summary.info.model

    @property
    def benchmark(self) -> str:
        return self.summary.bench.name


@dataclass(frozen=True)
class Cell:
    """A model's number on a benchmark: the headline (`name`), its value and interval, and its run (directory,
    report page where there is one, the client's version, when written), with `others`: the model's other runs
    of the benchmark (older complete ones, and incomplete ones) and `tie`: another complete run written at the
    same second (the cell's is the first by path)."""

    name: str
    value: float | None
    low: float | None
    high: float | None
    run_dir: Path
    report: Path | None
    version: str | None
    written: str
    dated_by: str
    others: int
    tie: bool = False


@dataclass(frozen=True)
class LeftOut:
    """A run that is no cell, and why: `kind` incomplete (its model and benchmark still have their row and
    column), reproduction or unreadable."""

    path: Path
    model: str | None
    benchmark: str | None
    kind: str
    why: str


@dataclass(frozen=True)
class Board:
    """The table: its columns (benchmark names, each with its title and headline's name), rows (model names) and
    cells by (model, benchmark); the runs left out, and notes."""

    benchmarks: tuple[str, ...]
    titles: dict[str, str]
    headlines: dict[str, str]
    models: tuple[str, ...]
    cells: dict[tuple[str, str], Cell]
    left_out: tuple[LeftOut, ...]
    notes: tuple[str, ...]


def summary_files(paths: Sequence[str | Path]) -> list[Path]:
    """The summary files of the run directories given and of those under the folders given (any depth), each once;
    DataError naming a path that is not there or holds no run."""
    found: dict[Path, None] = {}
    for given in map(Path, paths):
        if not given.exists():
            raise DataError(f"{given}: no such run directory or folder")
        own = given / C.SUMMARY_FILE
        inside = [own] if own.is_file() else sorted(given.rglob(C.SUMMARY_FILE)) if given.is_dir() else []
        if not inside:
            raise DataError(f"{given}: no run in it (no {C.SUMMARY_FILE} at any depth)")
        found |= dict.fromkeys(p.resolve() for p in inside)
    return list(found)


def _when(summary: RunSummary, file: Path) -> tuple[float, str]:
    stamp = summary.info.stamp
    if stamp is not msgspec.UNSET and stamp.written:
        try:
            return datetime.datetime.fromisoformat(stamp.written).timestamp(), "stamp"
        except ValueError:
            pass
    return file.stat().st_mtime, "file"


def read_runs(files: Iterable[Path]) -> tuple[list[Found], list[LeftOut]]:
    """The runs of these summary files that can stand in a cell, and those that cannot, with why."""
    runs, left = [], []
    for file in files:
        path = file.parent
        try:
            summary = load_summary(file)
        except (OSError, DataError) as exc:
            left.append(LeftOut(path, None, None, "unreadable", str(exc)))
            continue
        info, name = summary.info, summary.bench.name
        stamp = info.stamp
        if stamp is not msgspec.UNSET and stamp.reproduces is not msgspec.UNSET:
            left.append(LeftOut(path, info.model, name, "reproduction", f"a reproduction of {stamp.reproduces}"))
        elif not info.complete:
            why = "; ".join(info.partial) or (info.aborted if isinstance(info.aborted, str) else "") or "incomplete"
            left.append(LeftOut(path, info.model, name, "incomplete", why))
        else:
            runs.append(Found(path, summary, *_when(summary, file)))
    return runs, left


def _cell(run: Found, others: int, tie: bool) -> Cell:
    name, value = run.summary.leading()
    interval = run.summary.intervals().get(name)
    low, high = (interval[0], interval[1]) if interval else (None, None)
    stamp = run.summary.info.stamp
    version = stamp.version if stamp is not msgspec.UNSET else None
    written = datetime.datetime.fromtimestamp(run.when, datetime.UTC).isoformat(timespec="seconds")
    report = run.path / C.REPORT_FILE
    return Cell(name, value, low, high, run.path, report if report.is_file() else None, version, written,
                run.dated_by, others, tie)  # fmt: skip


def _fingerprints(run: Found) -> dict[str, Any]:
    models = run.summary.info.identity.get("models") or {}
    return {role: m.get("fingerprint") for role, m in models.items() if isinstance(m, dict) and m.get("fingerprint")}


def checkpoint_notes(model: str, chosen: Sequence[Found]) -> list[str]:
    """A note where a model's cells are runs of different checkpoints: a role whose fingerprints differ beyond
    `C.FINGERPRINT_TOLERANCE` between two benchmarks' runs."""
    notes = []
    seen: dict[str, tuple[str, list[float]]] = {}
    for run in chosen:
        for role, fingerprint in _fingerprints(run).items():
            if role not in seen:
                seen[role] = (run.benchmark, fingerprint)
                continue
            first, before = seen[role]
            a, b = np.asarray(before, dtype=float), np.asarray(fingerprint, dtype=float)
            if a.shape != b.shape or not within(a, b, C.FINGERPRINT_TOLERANCE):
                notes.append(f"{model}: not one checkpoint: the {role}'s fingerprint of its {run.benchmark} run "
                             f"differs from its {first} run's")  # fmt: skip
    return notes


def board(runs: Sequence[Found], left_out: Sequence[LeftOut]) -> Board:
    """The table of these runs (`read_runs`)."""
    groups: dict[tuple[str, str], list[Found]] = {}
    for run in runs:
        groups.setdefault((run.model, run.benchmark), []).append(run)
    incomplete = [(x.model, x.benchmark) for x in left_out if x.kind == "incomplete" and x.model and x.benchmark]
    everyone = [*((r.model, r.benchmark) for r in runs), *incomplete]
    names = [n for n in registry.names() if any(b == n for _, b in everyone)]
    cells: dict[tuple[str, str], Cell] = {}
    chosen_by_model: dict[str, list[Found]] = {}
    for key, found in groups.items():
        found.sort(key=lambda r: (-r.when, str(r.path)))
        tie = len(found) > 1 and found[1].when == found[0].when
        others = len(found) - 1 + incomplete.count(key)
        cells[key] = _cell(found[0], others, tie)
        chosen_by_model.setdefault(key[0], []).append(found[0])
    models = sorted({m for m, _ in everyone}, key=lambda m: (m.casefold(), m))
    notes = [n for m in models for n in checkpoint_notes(m, chosen_by_model.get(m, []))]
    headlines = {n: next((c.name for (_, b), c in cells.items() if b == n), "") for n in names}
    titles = {n: registry.get(n).title or n for n in names}
    return Board(tuple(names), titles, headlines, tuple(models), cells, tuple(left_out), tuple(notes))


def leaderboard(paths: Sequence[str | Path]) -> Board:
    """The leaderboard of the runs in and under `paths` (module docstring)."""
    runs, left = read_runs(summary_files(paths))
    return board(runs, left)
