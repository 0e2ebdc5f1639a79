"""RMB (Zhou-Zoey/RMB-Reward-Model-Benchmark): helpfulness and harmlessness over 49 scenarios, as pairs and as
best-of-N lists; accuracy per scenario, per set and overall, as RMB's own code computes it."""

from __future__ import annotations

from ..spec import Benchmark
from . import data, files, scoring, table
from .constants import CATEGORY_PATHS, SOURCE_COMMIT, SOURCE_REPO
from .summary import RmbSummary

BENCHMARK: Benchmark[RmbSummary] = Benchmark(
    name="rmb",
    title="RMB",
    layout=f"RMB's RMB_dataset/ JSON files (GitHub {SOURCE_REPO} at {SOURCE_COMMIT[:7]})",
    group_field="category_path",
    files_in=data.files_in,
    parse_record=data.parse_record,
    hub=(),  # RMB is published in its GitHub repository only (data/README.md)
    expected_groups=CATEGORY_PATHS,
    score=scoring.score,
    summary_type=RmbSummary,
    sample_line=files.line,
    read_record=files.read,
    table=table.rmb_table,
    headline=scoring.headline,
    headline_intervals=scoring.headline_intervals,
    prompt_values=scoring.prompt_values,
    headline_numbers=scoring.headline_numbers,
    scored_groups=scoring.scored_groups,
    summary_rows=table.rmb_rows,
)
