"""IF-RewardBench (thu-coai/IF-RewardBench): instruction-following, several responses per instruction ordered by a
preference graph; each response scored, the graph read listwise (pairwise accuracy, Kendall's tau-b) as its own
metrics scripts do, per instruction type, overall and in their breakdowns."""

from __future__ import annotations

from ..kinds import RANKING
from ..spec import Benchmark
from . import data, files, scoring, table
from .constants import FIELDS, NAME, SOURCE_COMMIT, SOURCE_REPO, TYPES
from .summary import IfRewardBenchSummary

BENCHMARK: Benchmark[IfRewardBenchSummary] = Benchmark(
    name=NAME,
    title="IF-RewardBench",
    kind=RANKING,  # a judge rates each response on its own (its own pairwise and checklist protocols: not here)
    layout=f"IF-RewardBench's data/if_rewardbench.json (GitHub {SOURCE_REPO} at {SOURCE_COMMIT})",
    group_field="instruction_type",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=FIELDS,
    expected_groups=TYPES,  # no hub: published in its GitHub repository
    numbers=scoring,
    shows=table,
    lines=files,
)
