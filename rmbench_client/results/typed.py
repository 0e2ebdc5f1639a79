"""Typed results of the Python API: what a run, a suite, a re-scoring or a comparison returns.

Each is built from the files the CLI writes (a run directory's `summary.json`, a suite's `suite.json`), so a result
read back later (`load_result`) equals the one a run returned. Fractions are in [0, 1]; an interval is the
benchmark's 95% bootstrap interval where it has one.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import constants as C
from ..errors import DataError, UserError
from .comparison import Difference
from .stamp import Stamp, read_stamp
from .summary import RunSummary, load_json, read_summary

Status = Literal["complete", "partial", "failed", "aborted"]
"""What a result is good for, in one word (`status_of`):

- complete: the benchmark's full score;
- partial: every prompt the run covers is scored, but it covers less than the benchmark (a `limit`, a group with no
  data): the numbers are right for what was scored;
- failed: some prompts could not be scored (`failures` says which and why): the same call tries them again;
- aborted: the run stopped before every prompt was tried (`aborted` says why: an outage, a signal, a cancellation,
  an error): the same call resumes it.
"""


def status_of(complete: bool, failed: int, aborted: str | None) -> Status:
    """A result's status from its summary's facts: the first of aborted, failed, partial that holds, else complete."""
    if aborted:
        return "aborted"
    if failed:
        return "failed"
    return "complete" if complete else "partial"


@dataclass(frozen=True)
class Estimate:
    """A number with its 95% interval (`low`, `high`: None where the benchmark gives none). `value` is None where
    the run has no value (a group with no data) or the number is undefined: then `reason` says why (ProcessBench's
    F1 of a split whose solutions are all correct)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None


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
    """One run of one benchmark: its numbers, its run directory and what they are good for (`status`: complete,
    partial, failed or aborted). `partial` says in words why the result is not the benchmark's full score;
    `failures` maps a prompt id to why it was not scored; `aborted` says why the run stopped early (an outage, a
    signal, a cancellation), None when it ran to the end. `tracker_errors`: what the trackers refused (the result
    and its files are whole all the same). `stamp`: what made it (the client's version, the Python, the libraries,
    when, the command or call and its config); None for a run written before stamps."""

    model: str
    run_dir: Path
    complete: bool
    partial: tuple[str, ...]
    prompts: int
    scored: int
    failures: Mapping[str, str] = field(default_factory=dict)
    aborted: str | None = None
    sent: int = 0  # what this call sent to the servers (0 when every score was stored already: a resumed run)
    tracker_errors: tuple[str, ...] = ()
    stamp: Stamp | None = None

    @property
    def status(self) -> Status:
        """complete, partial, failed or aborted (`Status`)."""
        return status_of(self.complete, len(self.failures), self.aborted)

    @property
    def all_scored(self) -> bool:
        """Every prompt of the run was scored: status complete or partial (the CLI's exit code 0)."""
        return self.status in ("complete", "partial")


@dataclass(frozen=True)
class SuiteResult:
    """A suite: one `BenchmarkResult` per benchmark that was run, under the model's `directory` (with `suite.md`
    and `suite.json`); `missing` (no data), `errors` (data refused) and `not_run` (data there, but the suite was
    stopped before it: the same call runs it) name the benchmarks left out and why. `interrupted_by`: the signal
    that stopped the suite, handed on to the caller's handler (which returned, or this result would not be here).
    `stamp`: what wrote the suite's table (each result has its own)."""

    model: str
    directory: Path
    results: Mapping[str, BenchmarkResult]
    missing: Mapping[str, str] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    not_run: Mapping[str, str] = field(default_factory=dict)
    interrupted_by: signal.Signals | None = None
    stamp: Stamp | None = None

    @property
    def complete(self) -> bool:
        """Every benchmark run and complete."""
        ran = bool(self.results) and all(r.complete for r in self.results.values())
        return ran and not self.errors and not self.not_run

    @property
    def status(self) -> Status:
        """The worst of its results' statuses (aborted, failed, partial, complete); aborted too when the suite was
        stopped before a benchmark (`not_run`), failed when a benchmark's data was refused (`errors`) or nothing
        ran; partial when a benchmark had no data (`missing`)."""
        found = {r.status for r in self.results.values()}
        if "aborted" in found or self.not_run:
            return "aborted"
        if "failed" in found or self.errors or not self.results:
            return "failed"
        return "partial" if "partial" in found or self.missing else "complete"

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """Every benchmark's `metrics`, in one mapping."""
        out: dict[str, float] = {}
        for result in self.results.values():
            out |= result.metrics(prefix)
        return out


@dataclass(frozen=True)
class Comparison:
    """Runs of one benchmark side by side: `columns` (compare's headline numbers) and one row per run (`models`,
    in order) of those numbers with their intervals, and whether each run is complete.

    `differences`: per run after the first (`models[1:]`), each headline number's paired `Difference` against the
    first run (value, 95% interval, p-value, significant), over the `shared` prompts every run scored with the
    same text; empty when they are not tested (one run, a run without its samples.jsonl, a benchmark whose
    headline numbers are no means over prompts, runs over different data). `left_out`: per run, its scored
    prompts left out of them. `notes`: what `compare` notes under its table (why numbers are not comparable, what
    was left out of the differences or why they are not tested)."""

    benchmark: str
    columns: tuple[str, ...]
    models: tuple[str, ...]
    rows: tuple[Mapping[str, Estimate], ...]
    complete: tuple[bool, ...]
    differences: tuple[Mapping[str, Difference], ...] = ()
    shared: int | None = None
    left_out: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()


# The command line's flags as the API's keywords, for the words of results and errors both share
_API_WORDS = (
    (re.compile(r"--limit (\d+)"), r"limit=\1"),
    (re.compile(r"--data PATH\b"), "data=PATH"),
    (re.compile(r"--data\b"), "data="),
    (re.compile(r"--out\b"), "out="),
    (re.compile(r"--fresh\b"), "fresh=True"),
    (re.compile(r"pass --model or --served-model\b"), "set its main role's 'served_model'"),
    (re.compile(r"--threshold\b"), "threshold="),
    (re.compile(r"--domain NAME\b"), "domain=NAME"),
)


def api_words(text: str) -> str:
    """A message the command line and the API share, in the API's words (`limit=40`, not `--limit 40`)."""
    for flag, keyword in _API_WORDS:
        text = flag.sub(keyword, text)
    return text


@contextlib.contextmanager
def in_api_words() -> Iterator[None]:
    """A user's mistake raised in the API's words (`limit=40`, `out=`), not the command line's."""
    try:
        yield
    except UserError as exc:
        exc.args = tuple(api_words(a) if isinstance(a, str) else a for a in exc.args)
        raise


def _estimate(value: Any, interval: Any, reason: str | None = None) -> Estimate:
    number = float(value) if isinstance(value, int | float) else None
    why = reason if number is None else None
    if isinstance(interval, list | tuple) and len(interval) == 2 and all(isinstance(b, int | float) for b in interval):
        return Estimate(number, float(interval[0]), float(interval[1]), why)
    return Estimate(number, reason=why)


def scores_of(summary: RunSummary) -> Scores:
    """The typed numbers of a summary (a run's or a re-scoring's)."""
    intervals, undefined = summary.intervals(), summary.undefined()
    headlines = {name: _estimate(value, intervals.get(name), undefined.get(name)) for name, value in summary.headline()}
    columns, rows = summary.bench.summary_rows(summary.numbers)
    groups = []
    for row in rows:
        numbers, why = {}, row.get("why", {})
        for col, cell in zip(columns, row["values"], strict=False):
            values = list(cell) if isinstance(cell, list | tuple) else [cell]  # [value] or [value, low, high]
            numbers[col] = _estimate(values[0], values[1:3], why.get(col))
        groups.append(Group(str(row["name"]), numbers, row.get("n"), bool(row.get("total"))))
    name, _ = summary.leading()  # as `suite` shows it
    return Scores(
        benchmark=summary.bench.name,
        headline_name=name,
        headline=headlines.get(name, Estimate(None)),
        headlines=headlines,
        groups=tuple(groups),
        summary=dict(summary.raw),
    )


def failure_records(run_dir: Path) -> list[dict[str, Any]]:
    """The lines of a run directory's failures.jsonl (none when it has no such file)."""
    path = run_dir / C.FAILURES_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def failures_by_endpoint(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many failed prompts each endpoint failed last (`""`: failures that name no endpoint), most first."""
    counts: dict[str, int] = {}
    for rec in records:
        counts[str(rec.get("endpoint") or "")] = counts.get(str(rec.get("endpoint") or ""), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _failures(run_dir: Path) -> dict[str, str]:
    return {str(rec["id"]): str(rec["reason"]) for rec in failure_records(run_dir)}


def result_of(
    run_dir: Path, summary: Mapping[str, Any], failures: Mapping[str, str] | None = None, sent: int = 0
) -> BenchmarkResult:
    """The typed result of a run directory whose summary is `summary`."""
    view = read_summary(summary, str(run_dir / C.SUMMARY_FILE), run_dir)
    scores, info = scores_of(view), view.info
    return BenchmarkResult(
        benchmark=scores.benchmark,
        headline_name=scores.headline_name,
        headline=scores.headline,
        headlines=scores.headlines,
        groups=scores.groups,
        summary=scores.summary,
        model=info.model,
        run_dir=run_dir,
        complete=bool(info.complete),
        partial=tuple(api_words(why) for why in info.partial),
        prompts=info.prompts or 0,
        scored=info.scored or 0,
        failures=dict(failures if failures is not None else _failures(run_dir)),
        aborted=info.aborted or None,
        sent=sent,
        stamp=read_stamp(summary.get("stamp")),
    )


class RunInterrupted(KeyboardInterrupt):
    """A signal (SIGINT, SIGTERM) ended an evaluation after its outputs were written, and the handler installed
    before the run raises KeyboardInterrupt (Python's default for SIGINT): the result so far rides along. `result`
    is the `BenchmarkResult` (or, for a suite, the `SuiteResult`); `run_dir` where its files are (the suite's
    directory for a suite): the same call resumes it."""

    def __init__(self, sig: signal.Signals, run_dir: Path, result: BenchmarkResult | SuiteResult | None = None) -> None:
        super().__init__(f"interrupted by {sig.name}; every score is kept in {run_dir}: run again to resume")
        self.signal, self.run_dir, self.result = sig, run_dir, result


def load_result(run_dir: str | Path) -> BenchmarkResult:
    """The result of a finished run, read back from its run directory (`summary.json`, `failures.jsonl`); its `sent`
    is 0.

    Raises:
        DataError: the directory holds no readable summary.
    """
    path = Path(run_dir)
    file = path / C.SUMMARY_FILE
    try:
        summary = load_json(file)
    except FileNotFoundError:
        raise DataError(f"{path}: not a run directory (no {C.SUMMARY_FILE})") from None
    if not isinstance(summary, dict):
        raise DataError(f"{file}: not a summary object")
    return result_of(path, summary)
