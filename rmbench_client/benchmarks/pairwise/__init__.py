"""Your own preference data: a JSON, JSONL or parquet file of records with prompt, chosen and rejected (and an
optional subset), scored as RewardBench scores a pair."""

from __future__ import annotations

from functools import partial

from ..shared import pairwise
from ..shared.pairwise import PairSummary
from ..spec import Benchmark
from . import data

NAME = "pairwise"


BENCHMARK: Benchmark[PairSummary] = Benchmark(
    name=NAME,
    title="your own preference data",
    layout="your own pairs: a JSON, JSONL or parquet file of records with prompt, chosen and rejected",
    group_field="subset",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("id", "prompt", "chosen", "rejected", "subset"),
    score=pairwise.score,
    summary_type=PairSummary,
    sample_line=partial(pairwise.named_line, name=NAME),
    read_record=partial(pairwise.named_read, name=NAME),
    table=pairwise.pairwise_table,
    headline=pairwise.headline,
    headline_intervals=pairwise.headline_intervals,
    prompt_values=pairwise.prompt_values,
    headline_numbers=pairwise.headline_numbers,
    scored_groups=pairwise.scored_groups,
    summary_rows=pairwise.pairwise_rows,
)
