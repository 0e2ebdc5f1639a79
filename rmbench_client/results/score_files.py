"""Reading every file `rmbench-client score` accepts, through the benchmark registry.

Per-prompt files (JSON list, JSON lines, records written one after another, column-wise objects, parquet): each
record is offered to the registered benchmarks in turn (`Benchmark.read_record`), or to the one it names in a
`benchmark` key; one benchmark per call, ids unique. A record's `details` object (e.g. a judge's unparsed
ratings) is kept. Results files (one object of subset scores, reward-bench's `eval-set/<model>.json`) give the
summary of their subset scores (`Benchmark.results_summary`); several are merged (eval-set plus pref-sets).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..benchmarks import registry as benchmarks
from ..benchmarks.shared.records import columns_to_records, read_json, read_records, record_name
from ..errors import ConfigError, DataError
from ..examples import PromptScores


def parse_scores(
    rec: Any, path: Path, index: int, domain: str | None, benchmark: str | None = None
) -> tuple[str, PromptScores]:
    """(benchmark, scores) of one record of any registered layout (`benchmark`: of that benchmark's, also where
    the record names none)."""
    where = record_name(path, index, rec)
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected an object, got {type(rec).__name__}")
    if benchmark is not None:
        rec = {"benchmark": benchmark} | rec
    named = rec.get("benchmark")
    if named is not None:
        if named not in benchmarks.names():
            raise DataError(f"{where}: unknown benchmark {named!r} (known: {', '.join(benchmarks.names())}; one "
                            "defined in a file: give the file with --benchmark FILE.yaml)")  # fmt: skip
        candidates = [benchmarks.get(named)]
    else:
        candidates = list(benchmarks.benchmarks())
    for bench in candidates:
        scores = bench.read_record(rec, where, index, domain)
        if scores is not None:
            details = rec.get("details")
            if isinstance(details, dict):
                scores = dataclasses.replace(scores, details=details)
            return bench.name, scores
    raise DataError(f"{where}: not a score record of a known layout (keys: {', '.join(sorted(rec)[:8])})")


def _is_results(data: Any) -> bool:
    """One object of scalars (subset scores and model metadata), not records or columns."""
    return isinstance(data, dict) and bool(data) and not any(isinstance(v, list | dict) for v in data.values())


def _records(path: Path, data: Any) -> list[Any]:
    if isinstance(data, dict):
        rows = columns_to_records(data)
        if rows is not None:
            return rows
    return read_records(path) if not isinstance(data, list) else data


def _scores(path: Path, records: list[Any], domain: str | None, state: dict[str, Any]) -> None:
    for i, rec in enumerate(records):
        bench, scores = parse_scores(rec, path, i, domain, state["given"])
        if state["benchmark"] is None:
            state["benchmark"] = bench
        elif bench != state["benchmark"]:
            raise DataError(f"{record_name(path, i, rec)}: a {bench} record among {state['benchmark']} records")
        key = (scores.group, scores.id)
        if key in state["seen"]:
            first = state["seen"][key]
            raise DataError(f"{record_name(path, i, rec)}: duplicate id {scores.id!r} (first in {first})")
        if "id" in rec:  # id-less records (plain lists) are numbered per file: not comparable across files
            state["seen"][key] = path
        state["out"].append(scores)


def known_beside(files: Iterable[Path]) -> None:
    """The benchmarks defined in files that run directories holding `files` keep (a run's samples.jsonl)."""
    for directory in dict.fromkeys(f.parent for f in files):
        try:
            benchmarks.define_beside(directory)
        except ConfigError as exc:
            raise DataError(str(exc)) from None


def read_scores(
    paths: Iterable[str | Path], domain: str | None = None, benchmark: str | None = None
) -> tuple[str, list[PromptScores]]:
    """All per-prompt scores of the files, and their benchmark; one benchmark per call, ids unique. `benchmark`
    (a name or a benchmark file): the records are that benchmark's, also those that name none."""
    files = [Path(p) for p in paths]
    given = benchmarks.get(benchmark).name if benchmark is not None else None
    known_beside(files)
    state: dict[str, Any] = {"benchmark": None, "out": [], "seen": {}, "given": given}
    for path in files:
        data = None if path.suffix == ".parquet" else read_json(path)
        if _is_results(data):
            raise DataError(f"{path}: a results file (subset scores), not per-prompt scores")
        _scores(path, read_records(path) if data is None else _records(path, data), domain, state)
    if state["benchmark"] is None:
        raise DataError(f"{', '.join(map(str, files))}: no score records")
    return state["benchmark"], state["out"]


def summarize(
    paths: Iterable[str | Path],
    domain: str | None = None,
    seed: int = 0,
    threshold: float | None = None,
    benchmark: str | None = None,
    prm_function: str | None = None,
) -> dict[str, Any]:
    """The summary of the files: per-prompt scores re-scored (a process benchmark's at `threshold`, default
    constants.PRM_THRESHOLD; `benchmark`: as that benchmark's; step scores aggregated by `prm_function`, where the
    benchmark takes one), or results files' subset scores."""
    files = [Path(p) for p in paths]
    results = {p: read_json(p) for p in files if p.suffix != ".parquet"}
    objects = {p: d for p, d in results.items() if _is_results(d)}
    if not objects:
        name, records = read_scores(files, domain, benchmark)
        bench = benchmarks.get(name)
        if threshold is not None and not bench.process:
            raise DataError(f"{', '.join(map(str, files))}: --threshold is for process benchmarks, not {name}")
        options: dict[str, Any] = {"threshold": threshold} if threshold is not None else {}
        if prm_function is not None:
            if prm_function not in bench.prm_functions:
                takes = f"it takes {', '.join(bench.prm_functions)}" if bench.prm_functions else "it has no step scores"
                raise DataError(f"{', '.join(map(str, files))}: --prm-function {prm_function} is no aggregation of "
                                f"{name}'s step scores ({takes})")  # fmt: skip
            options["prm_function"] = prm_function
        elif bench.prm_functions and any(r.response_steps is not None and not r.chosen for r in records):
            raise DataError(f"{', '.join(map(str, files))}: step scores: choose how a response's step scores become "
                            f"one with --prm-function ({', '.join(bench.prm_functions)})")  # fmt: skip
        return bench.summary_json(bench.score(records, seed=seed, **options))
    if len(objects) != len(files):
        other = next(p for p in files if p not in objects)
        raise DataError(f"{other}: per-prompt scores cannot be scored together with results files")
    merged: dict[str, Any] = {}
    for obj in objects.values():
        merged |= obj
    where = ", ".join(map(str, files))
    for bench in benchmarks.benchmarks():
        summary = bench.results_summary(merged, where) if bench.results_summary else None
        if summary is not None:
            return bench.summary_json(summary)
    raise DataError(f"{where}: a results object naming no subset of a known benchmark")
