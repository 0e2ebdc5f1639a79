"""ProcessBench (Qwen/ProcessBench): math solutions, each either correct or wrong from a labelled earliest step;
a model is right when it finds that step (or none), F1 of the two accuracies per split, as ProcessBench computes it."""

from __future__ import annotations

from ..kinds import STEPS
from ..spec import Benchmark, HubSource
from . import data, files, scoring, table
from .constants import HUB_REPO, SPLITS
from .summary import ProcessBenchSummary

BENCHMARK: Benchmark[ProcessBenchSummary] = Benchmark(
    name="processbench",
    title="ProcessBench",
    kind=STEPS,
    layout=f"ProcessBench's split files ({', '.join(SPLITS)}; JSON or parquet): a directory",
    group_field="split",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=data.REQUIRED,
    hub=(HubSource(HUB_REPO, tuple(f"{split}.json" for split in SPLITS)),),
    expected_groups=SPLITS,
    numbers=scoring,
    shows=table,
    lines=files,  # its own line: ProcessBench's label (the first wrong step) in place of the step labels
    step_rule="not below",
)
