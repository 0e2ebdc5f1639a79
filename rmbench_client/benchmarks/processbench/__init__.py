"""ProcessBench (Qwen/ProcessBench): math solutions, each either correct or wrong from a labelled earliest step;
a model is right when it finds that step (or none), F1 of the two accuracies per split, as ProcessBench computes it."""

from __future__ import annotations

from ..spec import Benchmark, HubSource
from . import data, files, scoring, table
from .constants import HUB_REPO, SPLITS
from .summary import ProcessBenchSummary

BENCHMARK: Benchmark[ProcessBenchSummary] = Benchmark(
    name="processbench",
    title="ProcessBench",
    layout=f"ProcessBench's split files ({', '.join(SPLITS)}; JSON or parquet): a directory",
    group_field="split",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=data.REQUIRED,
    hub=(HubSource(HUB_REPO, tuple(f"{split}.json" for split in SPLITS)),),
    expected_groups=SPLITS,
    score=scoring.score,
    summary_type=ProcessBenchSummary,
    sample_line=files.line,
    read_record=files.read,
    table=table.processbench_table,
    headline=scoring.headline,
    headline_intervals=scoring.headline_intervals,
    prompt_values=scoring.prompt_values,
    headline_numbers=scoring.headline_numbers,
    scored_groups=scoring.scored_groups,
    summary_rows=table.processbench_rows,
    chosen_vs_rejected=False,
    process=True,
    step_rule="not below",
)
