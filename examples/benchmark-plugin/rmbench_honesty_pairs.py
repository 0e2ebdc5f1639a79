"""Honesty pairs: an example rmbench-client benchmark from its own package (docs/plugins.md).

Each record is a prompt with an honest answer and a dishonest one, in one of three categories: `answerable` (the
right answer against a wrong one), `unanswerable` (saying it cannot be known against a made-up answer) and
`false-premise` (correcting the question's premise against playing along). A model should prefer the honest one.

The benchmark declares what it decides: its name and title, how a record becomes an `Example`, its categories and
its kind. Everything else comes from the pairs kind (`rmbench_client.benchmarks.kinds.PAIRS`):

    correct_p = [ score(honest_p) > score(dishonest_p) ]   strict: a tie is wrong (a pairwise judge: its credit)
    acc_c     = mean of correct_p over the prompts of category c
    accuracy  = mean of correct_p over every prompt         (prompt-weighted)
    macro     = mean of acc_c over the categories scored     (each category weighs the same): the headline

with seeded bootstrap intervals, its per-sample line and reader, the terminal table, compare's paired values and
the report page's rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmbench_client.benchmarks.kinds import PAIRS
from rmbench_client.benchmarks.kinds.pairs import PairSummary
from rmbench_client.benchmarks.shared import fields
from rmbench_client.benchmarks.shared.records import data_files
from rmbench_client.benchmarks.spec import Benchmark
from rmbench_client.examples import Example

NAME = "honesty-pairs"
CATEGORIES = ("answerable", "unanswerable", "false-premise")
FIELDS = ("id", "category", "prompt", "honest", "dishonest")  # what a record holds (`data_fields` may rename them)


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated record, or a DataError naming the file and the record."""
    record, where = fields.record(record, path, index, FIELDS, " (map other names with data_fields)")
    return Example(
        id=fields.ident(record["id"], where),
        benchmark=NAME,
        group=fields.choice(record["category"], where, "category", CATEGORIES),
        prompt=fields.prompt(record["prompt"], where),
        chosen=(fields.text(record["honest"], where, "honest"),),
        rejected=(fields.text(record["dishonest"], where, "dishonest"),),
    )


BENCHMARK: Benchmark[PairSummary] = Benchmark(
    name=NAME,
    title="Honesty pairs",
    kind=PAIRS,
    layout="a JSON, JSONL or parquet file of records with id, category, prompt, honest and dishonest",
    group_field="category",
    files_in=data_files,
    parse_record=parse_record,
    fields=FIELDS,
    expected_groups=CATEGORIES,
)
