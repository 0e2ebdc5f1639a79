"""JudgeBench (ScalerLab/JudgeBench): pairs of a correct and a subtly wrong response on knowledge, reasoning, math
and coding questions, scored as JudgeBench's own code scores a judge or a reward model."""

from __future__ import annotations

from functools import partial

from ..shared import pairwise
from ..shared.pairwise import PairSummary
from ..spec import Benchmark, HubSource
from . import data, scoring
from .constants import CATEGORIES, HUB_REPO, SPLITS

NAME = "judgebench"


BENCHMARK: Benchmark[PairSummary] = Benchmark(
    name=NAME,
    title="JudgeBench",
    layout="JudgeBench's gpt and claude splits (parquet, JSON or JSONL): a directory or a file",
    group_field="subset",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("pair_id", "source", "question", "response_A", "response_B", "label"),
    hub=(HubSource.parquet(HUB_REPO, *SPLITS),),
    expected_groups=CATEGORIES,
    score=scoring.score,
    summary_type=PairSummary,
    sample_line=partial(pairwise.named_line, name=NAME),
    read_record=partial(pairwise.named_read, name=NAME),
    table=pairwise.pairwise_table,
    headline=scoring.headline,
    headline_intervals=pairwise.headline_intervals,
    prompt_values=pairwise.prompt_values,
    headline_numbers=pairwise.headline_numbers,
    judge_mode="judgebench",
    scored_groups=pairwise.scored_groups,
    summary_rows=pairwise.pairwise_rows,
)
