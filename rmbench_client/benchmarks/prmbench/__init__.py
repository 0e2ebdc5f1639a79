"""PRMBench (ssmisya/PRMBench): solutions with labelled error steps in nine error classes; a process reward
model's PRMScore per class, group and overall, as PRMBench's own code computes it."""

from __future__ import annotations

from ..spec import Benchmark
from . import data, files, scoring, table
from .constants import CHECKSUMS, CLASSES, SOURCE_COMMIT, SOURCE_REPO
from .summary import PRMBenchSummary

BENCHMARK: Benchmark[PRMBenchSummary] = Benchmark(
    name="prmbench",
    title="PRMBench",
    layout=(
        f"PRMBench's mr_eval/tasks/prmtest_classified/data/*.jsonl (GitHub {SOURCE_REPO} at "
        f"{SOURCE_COMMIT[:7]}): a directory or a file"
    ),
    group_field="classification",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=data.REQUIRED,
    hub=(),  # published in its GitHub repository (data/README.md)
    checksums=CHECKSUMS,
    expected_groups=CLASSES,
    score=scoring.score,
    summary_type=PRMBenchSummary,
    sample_line=files.line,
    read_record=files.read,
    table=table.prmbench_table,
    headline=scoring.headline,
    headline_intervals=scoring.headline_intervals,
    prompt_values=scoring.prompt_values,
    headline_numbers=scoring.headline_numbers,
    scored_groups=scoring.scored_groups,
    summary_rows=table.prmbench_rows,
    chosen_vs_rejected=False,
    duplicates="a repeated id: PRMBench's loader keeps the first record of each id",
    data_notes=data.data_notes,
    process=True,
    step_rule="above",
)
