"""RewardBench 2 (allenai/reward-bench-2): one correct answer among several incorrect ones (Ties: several correct
ones) in six subsets, the final score their plain mean, scored as reward-bench's v2 scripts score them."""

from __future__ import annotations

from ..shared.eval_sets import RESULTS_DIR, SCORES_DIR
from ..spec import Benchmark, HubSource
from . import data, files, scoring, table
from .constants import HUB_REPO, HUB_SPLIT, SUBSETS
from .summary import RewardBench2Summary

BENCHMARK: Benchmark[RewardBench2Summary] = Benchmark(
    name="reward-bench-2",
    title="RewardBench 2",
    layout="RewardBench 2's test split (parquet, JSON or JSONL): a directory or a file",
    group_field="subset",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("id", "prompt", "chosen", "rejected", "subset", "num_correct", "models"),
    hub=(HubSource.parquet(HUB_REPO, HUB_SPLIT),),
    expected_groups=SUBSETS,
    numbers=scoring,  # no kind: one correct answer ranked among several, Ties rated apart
    table=table.table,
    lines=files,
    results_summary=files.results_summary,
    judge_mode="rating",
    chosen_vs_rejected=False,
    write_files=files.write_run_files,
    own_outputs=(RESULTS_DIR, SCORES_DIR),
)
