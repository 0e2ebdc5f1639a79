"""M-RewardBench (Cohere-Labs-Community/m-rewardbench): RewardBench translated into 23 languages, scored per language
as its own analysis scores it (subset accuracy, weighted categories, the language's score) and averaged over the
languages but English."""

from __future__ import annotations

from ..kinds import PAIRS
from ..spec import Benchmark, HubSource
from . import data, scoring, table
from .constants import FIELDS, HUB_REPO, LANGUAGES, NAME
from .summary import MRewardBenchSummary

BENCHMARK: Benchmark[MRewardBenchSummary] = Benchmark(
    name=NAME,
    title="M-RewardBench",
    kind=PAIRS,  # its numbers weigh the subsets into categories per language, then average the languages
    layout=f"M-RewardBench's language configs (the hub's {HUB_REPO}: <language>/test-*.parquet), a directory or a file",
    group_field="group",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=FIELDS,
    # each language's config into a folder of its own (data/m-reward-bench/<language>/): the folder names it
    hub=tuple(HubSource(HUB_REPO, (f"{lang}/test-*.parquet",), folder=lang) for lang in LANGUAGES),
    expected_groups=tuple(f"{lang}/{s}" for lang in LANGUAGES for s in data.SUBSETS),
    numbers=scoring,
    shows=table,
)
