"""What a run's summary says besides the benchmark's numbers: what was run, and whether the result is complete.

A result is complete only when every prompt of the benchmark was scored: no group (domain, subset) missing from
the data, no `--limit`, no failed prompt, no early stop. Otherwise `complete` is false and `partial` lists why in
words; the terminal table, `compare` and the report show it next to the score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .benchmarks.spec import Benchmark
from .config import RunConfig
from .data_hashes import file_sha256, prompt_hashes
from .datasets import Dataset
from .examples import Example


@dataclass(frozen=True)
class RunFacts:
    cfg: RunConfig
    bench: Benchmark  # the registry's entry for cfg.benchmark, resolved once by the run
    dataset: Dataset
    examples: list[Example]  # the prompts of this run (after --limit)
    failures: dict[str, str]
    warnings: list[str]
    identity: dict[str, Any]
    aborted: str | None


def partial_reasons(facts: RunFacts, scored: int) -> list[str]:
    """Why the result is not the benchmark's full score; empty when it is."""
    reasons = []
    if facts.dataset.missing:
        reasons.append(f"no data for {facts.bench.group_field}(s) {', '.join(facts.dataset.missing)}")
    if len(facts.examples) < len(facts.dataset.examples):
        reasons.append(f"--limit {facts.cfg.limit}: {len(facts.examples)} of {len(facts.dataset.examples)} prompts")
    if facts.failures:
        reasons.append(f"{len(facts.failures)} prompt(s) could not be scored")
    if facts.aborted:
        untried = len(facts.examples) - scored - len(facts.failures)
        reasons.append(f"stopped early ({facts.aborted}); {untried} prompt(s) not tried")
    return reasons


def finish_summary(summary: dict[str, Any], facts: RunFacts, scored: int) -> dict[str, Any]:
    """The benchmark's summary with the run's facts and its completeness."""
    cfg = facts.cfg
    reasons = partial_reasons(facts, scored)
    summary |= {
        "model": cfg.model,
        "type": cfg.type,
        "complete": not reasons,
        "partial": reasons,
        "prompts": len(facts.examples),
        "scored": scored,
        "failed": len(facts.failures),
        "limit": cfg.limit,
        "missing_groups": facts.dataset.missing,
        "data": {
            "sources": [str(p.resolve()) for p in facts.dataset.sources],
            "fields": dict(cfg.data_fields),
            "sha256": {str(p.resolve()): file_sha256(p) for p in facts.dataset.sources},
            "prompt_sha256": prompt_hashes(facts.examples),
        },
        "identity": facts.identity,
        "seed": cfg.seed,
    }
    if facts.dataset.unscored:  # records the benchmark does not score, by its own rule: not a partial result
        summary["unscored"] = {"records": facts.dataset.unscored, "why": facts.bench.unscored}
    if facts.dataset.duplicates:  # the benchmark's own loader leaves them out too: not a partial result
        summary["duplicates"] = {"ids": list(facts.dataset.duplicates), "why": facts.bench.duplicates}
    notes = facts.bench.data_notes(facts.examples)
    if notes:
        summary["data_notes"] = notes
    if facts.aborted:
        summary["aborted"] = facts.aborted
    if facts.warnings:
        summary["warnings"] = facts.warnings
    return summary
