"""JudgeBench (ScalerLab/JudgeBench): pairs of a correct and a subtly wrong response on knowledge, reasoning, math
and coding questions, scored as JudgeBench's own code scores a judge or a reward model."""

from __future__ import annotations

from ..kinds import PAIRS
from ..kinds.pairs import PairSummary
from ..spec import Benchmark, HubSource
from . import data, scoring
from .constants import CATEGORIES, HUB_REPO, SPLITS

BENCHMARK: Benchmark[PairSummary] = Benchmark(
    name="judgebench",
    title="JudgeBench",
    kind=PAIRS,
    layout="JudgeBench's gpt and claude splits (parquet, JSON or JSONL): a directory or a file",
    group_field="subset",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("pair_id", "source", "question", "response_A", "response_B", "label"),
    hub=(HubSource.parquet(HUB_REPO, *SPLITS),),
    expected_groups=CATEGORIES,
    headline=scoring.headline,  # the pair-weighted accuracy leads, as JudgeBench reports it
    judge_mode="judgebench",
)
