"""PRMBench (ssmisya/PRMBench): solutions with labelled error steps in nine error classes; a process reward
model's PRMScore per class, group and overall, as PRMBench's own code computes it."""

from __future__ import annotations

from ..kinds import STEPS
from ..spec import Benchmark
from . import data, scoring, table
from .constants import CHECKSUMS, CLASSES, SOURCE_COMMIT, SOURCE_REPO
from .summary import PRMBenchSummary

BENCHMARK: Benchmark[PRMBenchSummary] = Benchmark(
    name="prmbench",
    title="PRMBench",
    kind=STEPS,
    layout=(
        f"PRMBench's mr_eval/tasks/prmtest_classified/data/*.jsonl (GitHub {SOURCE_REPO} at "
        f"{SOURCE_COMMIT[:7]}): a directory or a file"
    ),
    group_field="classification",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=data.REQUIRED,
    checksums=CHECKSUMS,  # no hub: published in its GitHub repository (data/README.md)
    expected_groups=CLASSES,
    numbers=scoring,
    shows=table,
    duplicates="a repeated id: PRMBench's loader keeps the first record of each id",
    data_notes=data.data_notes,
    step_rule="above",
)
