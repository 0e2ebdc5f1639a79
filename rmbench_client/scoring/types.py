"""The types every benchmark's `score(records, seed, samples, lengths)` shares (benchmarks.Benchmark.score)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..examples import PromptScores

Records = Sequence[PromptScores]  # one prompt's scores each
Samples = int | None  # bootstrap samples; None: the default (constants.BOOTSTRAP_SAMPLES)
Lengths = Mapping[str, tuple[Sequence[int], Sequence[int]]]  # prompt id -> (chosen lengths, rejected lengths)
