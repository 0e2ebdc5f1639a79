"""Your own preference data: a JSON, JSONL or parquet file of records with prompt, chosen and rejected (and an
optional subset), scored as RewardBench scores a pair."""

from __future__ import annotations

from ..kinds import PAIRS
from ..kinds.pairs import PairSummary
from ..spec import Benchmark
from . import data

BENCHMARK: Benchmark[PairSummary] = Benchmark(
    name="pairwise",
    title="your own preference data",
    kind=PAIRS,
    layout="your own pairs: a JSON, JSONL or parquet file of records with prompt, chosen and rejected",
    group_field="subset",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("id", "prompt", "chosen", "rejected", "subset"),
)
