"""RM-Bench (THU-KEG/RM-Bench): does a reward model see a one-word factual error, or does it just like long,
markdown-heavy answers? Three chosen and three rejected responses per prompt, in three styles; accuracy as a 3x3
matrix of chosen style against rejected style, read as easy / normal / hard."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ...examples import Example
from ..kinds import PAIRS
from ..spec import Benchmark, HubSource, Records, RunMeta
from . import data, files, scoring, table
from .constants import CHECKSUMS, DATA_ENV, DOMAINS, HEATMAP_FILE, HUB_REPO, RESULTS_FILE, STYLES, TOTAL_FILE
from .summary import RMBenchSummary


def _write_files(
    out: Path, meta: RunMeta, summary: RMBenchSummary, examples: Mapping[str, Example], scores: Records
) -> list[Path]:
    """The heatmaps of the 3x3 matrices, and RM-Bench's own results file."""
    from .heatmap import write_heatmaps  # matplotlib: imported only when a run writes its files

    heatmaps = write_heatmaps(summary, out, meta.model) if meta.heatmaps else []
    return [*heatmaps, files.write_results(out, examples, scores)]


BENCHMARK: Benchmark[RMBenchSummary] = Benchmark(
    name="rm-bench",
    title="RM-Bench",
    kind=PAIRS,  # three chosen and three rejected a prompt, every chosen against every rejected: a 3x3 matrix
    layout=f"a directory of RM-Bench's *_filtered.json domain files or its {TOTAL_FILE}",
    group_field="domain",
    subgroup_field="subdomain",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("id", "prompt", "chosen", "rejected", "domain"),
    hub=(HubSource(HUB_REPO, (TOTAL_FILE,)),),
    checksums=CHECKSUMS,
    data_env=DATA_ENV,
    expected_groups=DOMAINS,
    numbers=scoring,
    shows=table,
    lines=files,
    chart_columns=(*scoring.LEVELS, "avg"),
    response_labels=STYLES,
    matrices=scoring.matrices,
    write_files=_write_files,
    own_outputs=(RESULTS_FILE, HEATMAP_FILE.format(name="*")),
)
