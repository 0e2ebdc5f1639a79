"""Typed results of the Python API: what a run, a suite, a re-scoring or a comparison returns.

Each is built from the files the CLI writes (a run directory's `summary.json`, a suite's `suite.json`), so a result
read back later (`load_result`) equals the one a run returned. Fractions are in [0, 1]; an interval is the
benchmark's 95% bootstrap interval where it has one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import constants as C
from .benchmarks import registry as benchmarks
from .errors import DataError


@dataclass(frozen=True)
class Estimate:
    """A number with its 95% interval (`low`, `high`: None where the benchmark gives none). `value` is None where
    the run has no value (a group with no data)."""

    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Group:
    """One row of the benchmark's table: a group (RM-Bench domain, RewardBench subset, ...) or an aggregate
    (`total`: overall, a section, the macro average), its numbers by column and its number of prompts."""

    name: str
    numbers: Mapping[str, Estimate]
    n: int | None = None
    total: bool = False


@dataclass(frozen=True, kw_only=True)
class Scores:
    """A benchmark's numbers: the headline (the number `suite` shows: RM-Bench's overall avg, RewardBench's and
    RewardBench 2's score, ...), compare's headline columns, and every group's numbers. `summary` is the summary
    object as written (`summary.json`, or what `score --json` prints)."""

    benchmark: str
    headline_name: str
    headline: Estimate
    headlines: Mapping[str, Estimate]
    groups: tuple[Group, ...]
    summary: dict[str, Any] = field(repr=False)

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """Flat numeric metrics for a tracker: `<prefix><benchmark>/headline`, each headline column as
        `<benchmark>/columns/<column>` and each group's numbers as `<benchmark>/groups/<group>/<column>` (None
        values left out). No name is a prefix path of another: MLflow's file store keeps each as a file."""
        base = f"{prefix}{self.benchmark}"
        out = {f"{base}/columns/{name}": e.value for name, e in self.headlines.items()}
        for g in self.groups:
            out |= {f"{base}/groups/{g.name}/{col}": e.value for col, e in g.numbers.items()}
        out[f"{base}/headline"] = self.headline.value
        return {k: float(v) for k, v in out.items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class BenchmarkResult(Scores):
    """One run of one benchmark: its numbers, its run directory and whether the result is the benchmark's full score
    (`complete`; else `partial` says why in words). `failures` maps a prompt id to why it was not scored; `aborted`
    says why the run stopped early (an outage, a signal), None when it ran to the end."""

    model: str
    run_dir: Path
    complete: bool
    partial: tuple[str, ...]
    prompts: int
    scored: int
    failures: Mapping[str, str] = field(default_factory=dict)
    aborted: str | None = None
    sent: int = 0  # what this call sent to the servers (0 when every score was stored already: a resumed run)

    @property
    def all_scored(self) -> bool:
        """Every prompt of the run was scored (the CLI's exit code 0)."""
        return not self.failures and self.aborted is None


@dataclass(frozen=True)
class SuiteResult:
    """A suite: one `BenchmarkResult` per benchmark that was run, under the model's `directory` (with `suite.md`
    and `suite.json`); `missing` and `errors` name the benchmarks left out and why."""

    model: str
    directory: Path
    results: Mapping[str, BenchmarkResult]
    missing: Mapping[str, str] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every benchmark run and complete."""
        return not self.errors and bool(self.results) and all(r.complete for r in self.results.values())

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """Every benchmark's `metrics`, in one mapping."""
        out: dict[str, float] = {}
        for result in self.results.values():
            out |= result.metrics(prefix)
        return out


@dataclass(frozen=True)
class Comparison:
    """Runs of one benchmark side by side: `columns` (compare's headline numbers) and one row per run (`models`,
    in order) of those numbers with their intervals, and whether each run is complete."""

    benchmark: str
    columns: tuple[str, ...]
    models: tuple[str, ...]
    rows: tuple[Mapping[str, Estimate], ...]
    complete: tuple[bool, ...]


def _estimate(value: Any, interval: Any) -> Estimate:
    number = float(value) if isinstance(value, int | float) else None
    if isinstance(interval, list | tuple) and len(interval) == 2:
        return Estimate(number, float(interval[0]), float(interval[1]))
    return Estimate(number)


def scores_of(summary: Mapping[str, Any], where: str) -> Scores:
    """The typed numbers of a summary object (a run's or a re-scoring's); DataError naming `where` when it is no
    benchmark's summary."""
    raw = dict(summary)
    bench = benchmarks.of_summary(raw, where)
    numbers = bench.read_summary(raw)
    intervals = bench.headline_intervals(numbers)
    headlines = {name: _estimate(value, intervals.get(name)) for name, value in bench.headline(numbers)}
    columns, rows = bench.summary_rows(numbers)
    groups = []
    for row in rows:
        numbers = {}
        for col, cell in zip(columns, row["values"], strict=False):
            values = list(cell) if isinstance(cell, list | tuple) else [cell]  # [value] or [value, low, high]
            numbers[col] = _estimate(values[0], values[1:3])
        groups.append(Group(str(row["name"]), numbers, row.get("n"), bool(row.get("total"))))
    name = next(reversed(headlines), "")  # the last headline column, as `suite` shows it
    return Scores(
        benchmark=bench.name,
        headline_name=name,
        headline=headlines.get(name, Estimate(None)),
        headlines=headlines,
        groups=tuple(groups),
        summary=raw,
    )


def _failures(run_dir: Path) -> dict[str, str]:
    path = run_dir / C.FAILURES_FILE
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out[str(rec["id"])] = str(rec["reason"])
    return out


def result_of(
    run_dir: Path, summary: Mapping[str, Any], failures: Mapping[str, str] | None = None, sent: int = 0
) -> BenchmarkResult:
    """The typed result of a run directory whose summary is `summary`."""
    scores = scores_of(summary, str(run_dir / C.SUMMARY_FILE))
    return BenchmarkResult(
        benchmark=scores.benchmark,
        headline_name=scores.headline_name,
        headline=scores.headline,
        headlines=scores.headlines,
        groups=scores.groups,
        summary=scores.summary,
        model=str(summary.get("model", "")),
        run_dir=run_dir,
        complete=bool(summary.get("complete")),
        partial=tuple(summary.get("partial", ())),
        prompts=int(summary.get("prompts", 0)),
        scored=int(summary.get("scored", 0)),
        failures=dict(failures if failures is not None else _failures(run_dir)),
        aborted=summary.get("aborted"),
        sent=sent,
    )


def load_result(run_dir: str | Path) -> BenchmarkResult:
    """The result of a finished run, read back from its run directory (`summary.json`, `failures.jsonl`); its `sent`
    is 0.

    Raises:
        DataError: the directory holds no readable summary.
    """
    path = Path(run_dir)
    file = path / C.SUMMARY_FILE
    try:
        summary = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: not a run directory (no {C.SUMMARY_FILE})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{file}: not a readable summary ({exc})") from None
    if not isinstance(summary, dict):
        raise DataError(f"{file}: not a summary object")
    return result_of(path, summary)
