"""RewardMATH (kimsh0507/RewardMATH_official): one correct solution to a MATH problem against nine wrong ones, scored
as its own `RewardMATHEvaluation` scores them (accuracy, mean reciprocal rank), per subject and overall; its own
result files are read by `score`."""

from __future__ import annotations

from ..kinds import BEST_OF_N
from ..shared.step_aggregates import NAMES
from ..spec import Benchmark, HubSource
from . import data, files, scoring, table
from .constants import FIELDS, HUB_REPO, NAME, SOURCE_COMMIT, SOURCE_REPO, SUBJECTS
from .summary import RewardMathSummary

BENCHMARK: Benchmark[RewardMathSummary] = Benchmark(
    name=NAME,
    title="RewardMATH",
    kind=BEST_OF_N,  # a judge compares the chosen solution with each rejected one, as upstream's --pairwise
    layout=f"RewardMATH's records, one per solution (dataset/benchmark/RewardMATH_direct.json of GitHub "
    f"{SOURCE_REPO} at {SOURCE_COMMIT}, or the hub's {HUB_REPO})",
    group_field="subject",
    files_in=data.files_in,
    gather=data.gather,
    parse_record=data.parse_record,
    fields=FIELDS,
    hub=(HubSource(HUB_REPO, ("*.json", "*.jsonl", "*.parquet")),),
    expected_groups=SUBJECTS,
    numbers=scoring,  # upstream's tie rules, sums and pairwise-judge scores; the subjects as the kind's groups
    shows=table,
    lines=files,
    prm_functions=NAMES,
)
