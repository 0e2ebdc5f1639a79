"""Scoring a benchmark's records by its name, as the registry's entry does, with the summary as written in JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rmbench_client.benchmarks import registry
from rmbench_client.benchmarks.spec import Lengths
from rmbench_client.examples import PromptScores


def score(
    benchmark: str, records: Sequence[PromptScores], seed: int = 0, lengths: Lengths | None = None, **options: Any
) -> dict:
    """The summary object of the benchmark's records (see the benchmark's scoring module for the formulas)."""
    bench = registry.get(benchmark)
    return bench.summary_json(bench.score(records, seed=seed, lengths=lengths, **options))
