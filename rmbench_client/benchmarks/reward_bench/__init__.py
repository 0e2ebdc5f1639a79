"""RewardBench (allenai/reward-bench): one chosen and one rejected response per prompt in 23 subsets, four
weighted sections (Chat, Chat Hard, Safety, Reasoning) and the prior sets, scored as reward-bench scores them."""

from __future__ import annotations

from ..kinds import PAIRS
from ..shared.eval_sets import RESULTS_DIR, SCORES_DIR
from ..shared.rewardbench_sections import SECTIONS
from ..spec import Benchmark, HubSource
from . import data, files, scoring, table
from .constants import (
    HUB_REPO,
    HUB_SPLIT,
    PRIOR_HUB_REPO,
    PRIOR_RESULTS_DIR,
    PRIOR_SCORES_DIR,
    PRIOR_SUBSETS,
)
from .summary import RewardBenchSummary

BENCHMARK: Benchmark[RewardBenchSummary] = Benchmark(
    name="reward-bench",
    title="RewardBench",
    kind=PAIRS,  # its numbers weigh the subsets into four sections (and the prior sets)
    layout="RewardBench's filtered split and the prior sets (parquet, JSON or JSONL): a directory or a file",
    group_field="subset",
    subgroup_field="section",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("id", "prompt", "chosen", "rejected", "subset"),
    hub=(HubSource.parquet(HUB_REPO, HUB_SPLIT), HubSource.parquet(PRIOR_HUB_REPO, *PRIOR_SUBSETS)),
    expected_groups=tuple(s for subsets in SECTIONS.values() for s in subsets),
    numbers=scoring,
    shows=table,
    lines=files,
    results_summary=files.results_summary,
    write_files=files.write_run_files,
    own_outputs=(RESULTS_DIR, SCORES_DIR, PRIOR_RESULTS_DIR, PRIOR_SCORES_DIR),
)
