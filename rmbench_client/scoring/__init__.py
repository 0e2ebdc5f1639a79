"""Pure numpy scoring of each benchmark from per-prompt scores (no I/O); one module per benchmark."""

from __future__ import annotations

from collections.abc import Sequence

from ..examples import PromptScores
from .types import Lengths


def score(benchmark: str, records: Sequence[PromptScores], seed: int = 0, lengths: Lengths | None = None) -> dict:
    """The summary dict of a benchmark (see the benchmark's scoring module for the formulas)."""
    from .. import benchmarks  # the registry imports this package's modules

    return benchmarks.get(benchmark).score(records, seed=seed, lengths=lengths)
