"""Runs of one benchmark compared: the runs read (`load_runs`), their per-prompt scores (the samples.jsonl beside
each summary) paired over the prompts that are the same texts in every run, and the paired differences of every
headline number against the first run (benchmarks/shared/significance.py), typed. The CLI's `compare`, the report
page and the API's `compare` show these; report/differences.py says how.

A difference is run minus first run (a fraction), with its paired bootstrap 95% interval, the paired permutation
test's p-value, and whether p < 0.05. A number undefined over the shared prompts (ProcessBench's F1 of a split of
one kind) has no difference: it is left out, and the notes say why.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import constants as C
from ..benchmarks.shared import significance
from ..errors import DataError
from ..examples import PromptScores
from .run_directory import without_summary
from .score_files import read_scores
from .summary import RunSummary, load_summary


@dataclass(frozen=True)
class Run:
    """One run compared: its name (the model, made unique among the runs), the path it was given as (a run
    directory or a summary file) and its summary."""

    name: str
    path: str
    summary: RunSummary


@dataclass(frozen=True)
class Difference:
    """One headline number of a run minus the first run's (`value`, a fraction), its paired bootstrap 95%
    interval (`low`, `high`), the paired permutation test's `p` and whether it is `significant` (p < 0.05)."""

    value: float
    low: float
    high: float
    p: float
    significant: bool


@dataclass(frozen=True)
class PairedDifferences:
    """Every run after the first (`runs`) against the first (`reference`), over the `shared` prompts every run
    scored: per run, its `Difference` by headline number. `left_out`: per run (the first too), its scored prompts
    that not every run scored."""

    reference: str
    runs: tuple[str, ...]
    shared: int
    left_out: tuple[int, ...]
    differences: tuple[Mapping[str, Difference], ...]


def _read(raw: str) -> tuple[Path, RunSummary]:
    path = Path(raw)
    file = path / C.SUMMARY_FILE if path.is_dir() else path
    if not file.is_file():
        if why := without_summary(path):
            raise DataError(f"{raw}: no {C.SUMMARY_FILE}: {why}")
        raise DataError(f"{raw}: not a run directory holding {C.SUMMARY_FILE}, nor a summary file")
    summary = load_summary(file)
    if not summary.scored_groups():
        raise DataError(f"{file}: the run scored no prompt")
    return file, summary


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """Each path's run (a run directory or a summary.json), all of one benchmark; names made unique."""
    if not paths:
        raise DataError("compare needs at least one run directory or summary file")
    runs: list[Run] = []
    for given in paths:
        raw = str(given)
        file, summary = _read(raw)
        name = summary.info.model or file.parent.resolve().name
        if any(name == r.name for r in runs):
            name = f"{name} ({raw})"  # the same model twice (two configs): keep the rows apart
        runs.append(Run(name, raw, summary))
    if len({r.summary.bench.name for r in runs}) > 1:
        which = ", ".join(f"{r.name}: {r.summary.bench.name}" for r in runs)
        raise DataError(f"cannot compare runs of different benchmarks ({which})")
    return runs


def notes(runs: Sequence[Run]) -> list[str]:
    """Why some numbers are not comparable: different sets of groups, or incomplete runs."""
    out = []
    if len({frozenset(r.summary.scored_groups()) for r in runs}) > 1:
        group = runs[0].summary.bench.group_field
        out.append(f"the runs cover different {group}s: overall numbers average over different sets")
    for run in runs:
        for reason in run.summary.info.partial:
            out.append(f"{run.name} is partial: {reason}")
    return out


def samples_file(raw: str | Path) -> Path:
    """The samples.jsonl of a run directory, or the one beside a summary file."""
    path = Path(raw)
    return (path if path.is_dir() else path.parent) / C.SAMPLES_FILE


def thresholds(runs: Sequence[Run]) -> set[float]:
    """The process benchmarks' step thresholds of the runs (empty for other benchmarks): a shared block of the
    summary, read from its JSON object."""
    return {float(r.summary.raw["threshold"]) for r in runs if "threshold" in r.summary.raw}


def load_samples(runs: Sequence[Run]) -> tuple[list[list[PromptScores]] | None, list[str]]:
    """Each run's per-prompt scores over the prompts that are the same texts in every run, and notes on what was
    left out; None when the differences cannot be tested (a run without its samples.jsonl, a benchmark whose
    headline numbers the test cannot recompute, runs over different data)."""
    bench = runs[0].summary.bench
    if bench.prompt_values is None or bench.headline_numbers is None:
        return None, [f"{bench.name}: its headline numbers are not means over prompts; differences are not tested"]
    if len(thresholds(runs)) > 1:
        return None, ["the runs judged steps at different thresholds: differences are not tested"]
    out = []
    for run in runs:
        file = samples_file(run.path)
        if not file.is_file():
            return None, [f"no {C.SAMPLES_FILE} beside {run.path}: differences are not tested for significance"]
        out.append(read_scores([file])[1])
    return paired_scores(runs, out)


def paired_scores(
    runs: Sequence[Run], scores: list[list[PromptScores]]
) -> tuple[list[list[PromptScores]] | None, list[str]]:
    """The runs' scores without the prompts whose texts differ between runs (same id, other content: two files
    numbered by index), with a note; None and a note when no scored prompt is the same in every run."""
    ids = set.intersection(*({s.id for s in run} for run in scores))
    if not ids:  # the table still shows each run's numbers; say what each scored
        each = "; ".join(f"{r.name}: {len(run)} ({_some_ids(run)})" for r, run in zip(runs, scores, strict=True))
        return None, [f"the runs share no prompt id, so differences are not tested; prompts scored by {each}"]
    same, notes = same_prompts(runs, ids)
    if ids and not same:
        return None, ["the runs scored different data (no prompt has the same content in every run): differences "
                      "are not tested"]  # fmt: skip
    differ = ids - same
    return [[s for s in run if s.id not in differ] for run in scores], notes


def _some_ids(run: list[PromptScores], shown: int = 3) -> str:
    ids = [s.id for s in run[:shown]]
    return "ids " + ", ".join(ids) + (", ..." if len(run) > shown else "")


def same_prompts(runs: Sequence[Run], ids: set[str]) -> tuple[set[str], list[str]]:
    """The ids among `ids` whose texts are the same in every run (their summaries' prompt hashes agree), and
    notes on what was left out and why."""
    hashes = [(r.name, r.summary.info.data.prompt_sha256) for r in runs]
    unknown = [name for name, h in hashes if h is None]
    if unknown:
        note = f"{', '.join(unknown)}: no data hashes in the summary (an older run); prompts are paired by id unchecked"
        return ids, [note]
    known = [h for _, h in hashes if h is not None]
    same = {i for i in ids if len({h.get(i) for h in known}) == 1 and known[0].get(i) is not None}
    if len(same) == len(ids):
        return same, []
    differ = len(ids) - len(same)
    files = sorted({f for r in runs for f in r.summary.info.data.sha256.items()})
    what = "the runs scored different data" if len({f for f, _ in files}) > 1 or differ == len(ids) else ""
    note = f"{differ} prompt(s) with the same id differ in content between the runs; left out of the paired test"
    return same, [f"{note} ({what})" if what else note]


def differences(
    runs: Sequence[Run], scores: list[list[PromptScores]], seed: int = C.BOOTSTRAP_SEED
) -> PairedDifferences:
    """The paired differences of every headline number of each run against the first, through the runs'
    benchmark (`scores`: the runs' paired per-prompt scores)."""
    bench = runs[0].summary.bench
    if bench.prompt_values is None or bench.headline_numbers is None:
        raise DataError(f"{bench.name}: its headline numbers are not means over prompts; no significance test")
    values = bench.prompt_values
    if bench.process:  # a step's judgement depends on the runs' threshold (the same for all: load_samples)
        found = thresholds(runs)
        if len(found) != 1:
            raise DataError("the runs judged steps at different thresholds: no significance test")
        values = functools.partial(bench.prompt_values, threshold=found.pop())
    result = significance.compare(scores, values, bench.headline_numbers, seed=seed)
    return PairedDifferences(
        reference=runs[0].name,
        runs=tuple(r.name for r in runs[1:]),
        shared=int(result["shared"]),
        left_out=tuple(int(k) for k in result["left_out"]),
        differences=tuple(
            {
                name: Difference(d["diff"], d["ci"][0], d["ci"][1], d["p"], d["significant"])
                for name, d in run.items()
                if math.isfinite(d["diff"])  # an undefined number has no difference (`untested`)
            }
            for run in result["differences"]
        ),
    )


def compared(runs: Sequence[Run], seed: int = C.BOOTSTRAP_SEED) -> tuple[PairedDifferences | None, list[str]]:
    """The runs' paired differences (None for one run, or where they cannot be tested) and the notes on what was
    left out of them or why they are not tested."""
    if len(runs) < 2:
        return None, []
    scores, why_not = load_samples(runs)
    if scores is None:
        return None, why_not
    paired = differences(runs, scores, seed=seed)
    return paired, why_not + untested(runs, paired)


def untested(runs: Sequence[Run], paired: PairedDifferences) -> list[str]:
    """A note per run for the headline numbers it has no difference in (undefined over the shared prompts in it
    or in the first run), with the runs' reasons where their summaries give them."""
    names = [name for name, _ in runs[0].summary.headline()]
    notes = []
    for run, found in zip(runs[1:], paired.differences, strict=True):
        scored = {*runs[0].summary.scored_groups(), *run.summary.scored_groups(), names[-1]}  # the last leads
        missing = [n for n in names if n not in found and n in scored]  # a group neither run scored: no note
        if not missing:
            continue
        why = [f"{r.name}: {n}: {w}" for r in (runs[0], run) for n in missing if (w := r.summary.undefined().get(n))]
        reasons = f" ({'; '.join(why)})" if why else ""
        notes.append(f"{run.name} against {runs[0].name}: no difference in {', '.join(missing)}, undefined over the "
                     f"shared prompts{reasons}")  # fmt: skip
    return notes
