"""PPE Correctness (lmarena's Preference Proxy Evaluations, five Best-of-K sets): answers graded correct or not by
their own checks; a reward model's accuracy on the sampled conflict pairs, and its best-of-K curve."""

from __future__ import annotations

from ..kinds import PAIRS
from ..spec import Benchmark, HubSource
from . import data, files, scoring, table
from .constants import HUB_REPOS, HUB_SPLIT, SETS
from .summary import CorrectnessSummary

BENCHMARK: Benchmark[CorrectnessSummary] = Benchmark(
    name="ppe-correctness",
    title="PPE Correctness",
    kind=PAIRS,  # a correct answer against a wrong one, in the sampled conflict pairs of each row
    layout=f"one folder per PPE Best-of-K set ({', '.join(SETS)}), each its parquet files",
    group_field="set",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("question_id", "model_name", "prompt", "scores", "sampled_conflict_pairs"),
    hub=tuple(HubSource(repo, (f"data/{HUB_SPLIT}-*.parquet",), folder=name) for name, repo in HUB_REPOS.items()),
    expected_groups=SETS,
    numbers=scoring,
    shows=table,
    lines=files,
)
