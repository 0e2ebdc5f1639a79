"""What a run's summary says besides the benchmark's numbers (`RunInfo`: what was run, and whether the result is
complete), and a summary read back once into a typed view (`RunSummary`: its benchmark, numbers and run facts).

A result is complete only when every prompt of the benchmark was scored: no group (domain, subset) missing from
the data, no `--limit`, no failed prompt, no early stop. Otherwise `complete` is false and `partial` lists why in
words; the terminal table, `compare` and the report show it next to the score.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec
from msgspec import UNSET, UnsetType

from ..benchmarks import registry
from ..benchmarks.spec import Benchmark
from ..datasets import missing_words
from ..errors import DataError
from ..redaction import hidden
from .data_hashes import file_sha256, prompt_hashes
from .stamp import Stamp, stamp

if TYPE_CHECKING:
    from ..config.schema import RunConfig
    from ..datasets import Dataset
    from ..examples import Example


class Unscored(msgspec.Struct, kw_only=True):
    """Records the benchmark does not score, by its own rule (not a partial result)."""

    records: int
    why: str


class Duplicates(msgspec.Struct, kw_only=True):
    """Later records with an id seen before, left out as the benchmark's own loader does (not a partial result)."""

    ids: list[str]
    why: str


class DataInfo(msgspec.Struct, kw_only=True):
    """The data a run scored: its files, the field names of the user's own data, each file's sha256 and each
    prompt's content hash (data_hashes.py)."""

    sources: list[str] = []
    fields: dict[str, str] = {}
    sha256: dict[str, str] = {}
    prompt_sha256: dict[str, str] | None = None  # None: a run written before prompts were hashed


class RunInfo(msgspec.Struct, kw_only=True):
    """The run's half of `summary.json`, after the benchmark's numbers, in the order it is written. A key a run
    writes only sometimes is UNSET (and not written) otherwise. Every key has a default so that a summary written
    before the key existed still reads: None (or empty) where that older summary says nothing."""

    model: str = ""
    type: str | None = None  # reward | dpo | judge | baseline | ...
    complete: bool | None = None  # None: an older summary that does not say
    partial: list[str] = []  # why the result is not the benchmark's full score
    prompts: int | None = None
    scored: int | None = None
    failed: int | None = None
    limit: int | None = None
    missing_groups: list[str] = []
    data: DataInfo = msgspec.field(default_factory=DataInfo)
    identity: dict[str, Any] = {}
    seed: int = 0
    unscored: Unscored | UnsetType = UNSET
    duplicates: Duplicates | UnsetType = UNSET
    data_notes: list[str] | UnsetType = UNSET  # the benchmark's notes on quirks of the data
    aborted: str | UnsetType = UNSET  # why the run stopped before every prompt was tried
    changed: list[str] | UnsetType = UNSET  # endpoints whose server changed during the run (never complete then)
    # each endpoint that answered part of the result (role, URL, engine release; on Ray its replica and node) with
    # the number of prompts it answered (part of): every release that answered is named (pool/provenance.py)
    answered_by: list[dict[str, Any]] | UnsetType = UNSET
    # the prompts one of whose roles was answered by two engine releases (their lines say `cross_release`)
    cross_release: int | UnsetType = UNSET
    taken_out: list[str] | UnsetType = UNSET  # each time an endpoint was taken out during scoring, and why
    warnings: list[str] | UnsetType = UNSET
    judge_cost: dict[str, Any] | UnsetType = UNSET  # what a judge spent on the verdicts of the result
    stamp: Stamp | UnsetType = UNSET  # what made the result (stamp.py); UNSET in a summary written before stamps


@dataclass(frozen=True)
class RunFacts:
    cfg: RunConfig
    bench: Benchmark[Any]  # the registry's entry for cfg.benchmark, resolved once by the run
    dataset: Dataset
    examples: list[Example]  # the prompts of this run (after --limit)
    failures: dict[str, str]
    warnings: list[str]
    identity: dict[str, Any]
    aborted: str | None
    changes: list[str] = dataclass_field(default_factory=list)  # endpoints whose server changed, in words
    failed_at: dict[str, str] = dataclass_field(default_factory=dict)  # failed prompt -> its last endpoint
    taken_out: list[str] = dataclass_field(default_factory=list)  # each time an endpoint was taken out, and why


def partial_reasons(facts: RunFacts, scored: int) -> list[str]:
    """Why the result is not the benchmark's full score; empty when it is."""
    reasons = []
    if facts.dataset.missing:
        reasons.append(missing_words(facts.dataset.missing, facts.bench.group_field))
    if len(facts.examples) < len(facts.dataset.examples):
        reasons.append(f"--limit {facts.cfg.limit}: {len(facts.examples)} of {len(facts.dataset.examples)} prompts")
    if facts.failures:
        reasons.append(f"{len(facts.failures)} prompt(s) could not be scored")
    if facts.aborted:
        untried = len(facts.examples) - scored - len(facts.failures)
        reasons.append(f"stopped early ({facts.aborted}); {untried} prompt(s) not tried")
    if facts.changes:  # what a changed server said is not in the result, but the run cannot vouch for itself
        reasons.append(f"{len(facts.changes)} endpoint(s) changed during the run (see `changed`); rerun to confirm")
    return reasons


def run_info(facts: RunFacts, scored: int) -> RunInfo:
    """The run's facts and its completeness (`judge_cost` is the runner's to set)."""
    cfg, dataset = facts.cfg, facts.dataset
    reasons = [hidden(r) for r in partial_reasons(facts, scored)]  # no URL's credentials (redaction.py)
    info = RunInfo(
        model=cfg.model,
        type=cfg.type,
        complete=not reasons,
        partial=reasons,
        prompts=len(facts.examples),
        scored=scored,
        failed=len(facts.failures),
        limit=cfg.limit,
        missing_groups=list(dataset.missing),
        data=DataInfo(
            sources=[str(p.resolve()) for p in dataset.sources],
            fields=dict(cfg.data_fields),
            sha256={str(p.resolve()): file_sha256(p) for p in dataset.sources},
            prompt_sha256=prompt_hashes(facts.examples),
        ),
        identity=facts.identity,
        seed=cfg.seed,
    )
    if dataset.unscored:  # records the benchmark does not score, by its own rule: not a partial result
        info.unscored = Unscored(records=dataset.unscored, why=facts.bench.unscored)
    if dataset.duplicates:  # the benchmark's own loader leaves them out too: not a partial result
        info.duplicates = Duplicates(ids=list(dataset.duplicates), why=facts.bench.duplicates)
    if notes := facts.bench.data_notes(facts.examples):
        info.data_notes = notes
    if facts.aborted:
        info.aborted = hidden(facts.aborted)
    if facts.changes:
        info.changed = [hidden(c) for c in facts.changes]
    if facts.taken_out:
        info.taken_out = [hidden(t) for t in facts.taken_out]
    if facts.warnings:
        info.warnings = [hidden(w) for w in facts.warnings]
    info.stamp = stamp(cfg, facts.identity)
    return info


@dataclass(frozen=True)
class RunSummary:
    """A summary object (`summary.json`, `score --json`) read once: its benchmark, the benchmark's typed numbers
    (`Benchmark.read_summary`), the run's facts, and the object itself, where blocks that several benchmarks
    share but not every one types are read (`style_bias`, a process benchmark's `threshold`)."""

    bench: Benchmark[Any]
    numbers: Any  # the benchmark's summary type
    info: RunInfo
    raw: Mapping[str, Any]

    def headline(self) -> list[tuple[str, float | None]]:
        """compare's columns (name, fraction), in the benchmark's order."""
        return self.bench.headline(self.numbers)

    def leading(self) -> tuple[str, float | None]:
        """The one number that stands for the run (`Benchmark.leading`)."""
        return self.bench.leading(self.numbers)

    def intervals(self) -> dict[str, list[float]]:
        """The 95% intervals of the headline numbers, where the benchmark has them."""
        return self.bench.headline_intervals(self.numbers)

    def scored_groups(self) -> list[str]:
        return self.bench.scored_groups(self.numbers)

    def undefined(self) -> dict[str, str]:
        """Each undefined figure (None in the summary) with why, by name: a headline column's name, or the
        benchmark's own name for a figure of a group (ProcessBench's `gsm8k/error_acc`); the style-bias length
        correlation's as `length rho` (`length rho of <group>`)."""
        found = self.raw.get("undefined")
        out = {str(k): str(v) for k, v in found.items()} if isinstance(found, Mapping) else {}
        corr = (self.raw.get("style_bias") or {}).get("length_correlation") or {}  # a block several benchmarks share
        blocks = [("length rho", corr), *((f"length rho of {g}", b) for g, b in (corr.get("groups") or {}).items())]
        return out | {name: str(b["why"]) for name, b in blocks if isinstance(b, Mapping) and b.get("why")}


def read_summary(raw: object, where: str, beside: Path | None = None) -> RunSummary:
    """The typed view of a summary object (`beside`: the directory it lies in, which may hold its benchmark's
    file); a DataError naming `where` when it is no known benchmark's summary or a key holds what no summary
    writes."""
    bench = registry.of_summary(raw, where, beside)
    summary = cast(dict[str, Any], raw)  # of_summary takes only an object
    try:
        return RunSummary(bench, bench.read_summary(summary), msgspec.convert(summary, RunInfo), summary)
    except msgspec.ValidationError as exc:
        raise DataError(f"{where}: not a readable summary ({exc})") from None


def load_json(file: Path) -> object:
    """A summary file's JSON; a DataError naming it when it cannot be read (FileNotFoundError is the caller's)."""
    try:
        found: object = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{file}: not a readable summary ({exc})") from None
    return found


def load_summary(file: Path) -> RunSummary:
    """The typed view of a summary file (DataError naming it when it is unreadable or no summary)."""
    return read_summary(load_json(file), str(file), file.parent)
