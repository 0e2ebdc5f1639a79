"""RMB (Zhou-Zoey/RMB-Reward-Model-Benchmark): helpfulness and harmlessness over 49 scenarios, as pairs and as
best-of-N lists; accuracy per scenario, per set and overall, as RMB's own code computes it."""

from __future__ import annotations

from ..kinds import PAIRS
from ..spec import Benchmark
from . import data, files, scoring, table
from .constants import CATEGORY_PATHS, SOURCE_COMMIT, SOURCE_REPO
from .summary import RmbSummary

BENCHMARK: Benchmark[RmbSummary] = Benchmark(
    name="rmb",
    title="RMB",
    kind=PAIRS,  # its best-of-N lists count as won only when the best beats every loser
    layout=f"RMB's RMB_dataset/ JSON files (GitHub {SOURCE_REPO} at {SOURCE_COMMIT[:7]})",
    group_field="category_path",
    files_in=data.files_in,
    parse_record=data.parse_record,
    expected_groups=CATEGORY_PATHS,  # no hub: RMB is published in its GitHub repository only (data/README.md)
    numbers=scoring,
    shows=table,
    lines=files,
)
