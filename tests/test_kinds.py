"""Benchmark kinds (rmbench_client/benchmarks/kinds/, spec.Benchmark): what a benchmark gets from its kind, from its
own modules (`numbers`, `shows`, `lines`) and from parts given by name, in that order of precedence; the full
contract of parts given one by one still makes the same benchmark; a part none of them gives is refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from rmbench_client.benchmarks import judgebench, pairwise, prmbench, registry, rmb
from rmbench_client.benchmarks import rmb as rmb_package
from rmbench_client.benchmarks.kinds import BEST_OF_N, KINDS, PAIRS, RANKING, STEPS, pairs, steps
from rmbench_client.benchmarks.rmb import files as rmb_files
from rmbench_client.benchmarks.rmb import scoring as rmb_scoring
from rmbench_client.benchmarks.rmb import table as rmb_table
from rmbench_client.benchmarks.shared.records import data_files
from rmbench_client.benchmarks.spec import Benchmark
from rmbench_client.examples import Example, PromptScores

RECORDS = [
    PromptScores("1", "math", (2.0,), (1.0,)),
    PromptScores("2", "math", (1.0,), (1.0,)),  # a tie: wrong
    PromptScores("3", "geo", (0.5,), (1.0,)),
    PromptScores("4", "geo", (3.0,), (1.0,)),
    PromptScores("5", "geo", (4.0,), (1.0,)),
]


def parse(record: Any, path: Path, index: int) -> Example:
    return Example(str(index), "mine", record["group"], record["prompt"], (record["a"],), (record["b"],))


def declared(**parts: Any) -> Benchmark[Any]:
    """A benchmark of the pairs kind named 'mine', its groups in a field 'topic', with these parts."""
    return Benchmark(
        name="mine", title="Mine", layout="pairs", group_field="topic", files_in=data_files, parse_record=parse, **parts
    )


def test_a_benchmark_of_the_pairs_kind_is_a_whole_benchmark_in_its_own_name() -> None:
    bench = declared(kind=PAIRS)
    summary = bench.score(RECORDS, samples=200)
    assert summary.benchmark == "mine" and summary.subsets == {"geo": 2 / 3, "math": 0.5}
    assert summary.accuracy == pytest.approx(3 / 5) and summary.macro_accuracy == pytest.approx((2 / 3 + 0.5) / 2)
    assert bench.headline(summary)[-1] == ("macro", summary.macro_accuracy)  # the groups' mean leads
    assert set(bench.headline_intervals(summary)) == {"geo", "math", "accuracy", "macro"}
    assert bench.scored_groups(summary) == ["geo", "math"]
    columns, rows = bench.summary_rows(summary)
    assert columns == ["accuracy"] and [r["name"] for r in rows] == ["geo", "math", "accuracy", "macro average"]
    assert bench.prompt_values is not None and bench.prompt_values(RECORDS).shape == (5, 1)
    assert bench.read_summary(bench.summary_json(summary)) == summary
    assert (bench.chosen_vs_rejected, bench.process) == (True, False)
    example = Example("7", "mine", "geo", "Which river?", ("The Nile.",), ("The Thames.",))
    line = bench.sample_line(example, PromptScores("7", "geo", (1.5,), (0.5,)))
    assert line == {"benchmark": "mine", "id": "7", "topic": "geo", "score_chosen": 1.5, "score_rejected": 0.5}
    assert bench.read_record(line, "line 1", 0, None) == PromptScores("7", "geo", (1.5,), (0.5,))
    assert bench.read_record(line | {"benchmark": "pairwise"}, "line 1", 0, None) is None  # another's line


def test_the_full_contract_makes_the_same_benchmark_as_the_kind() -> None:
    lines = pairs.Lines("mine", "topic")
    explicit = declared(
        score=lambda records, **options: pairs.score(records, benchmark="mine", **options),
        summary_type=pairs.PairSummary,
        sample_line=lines.line,
        read_record=lines.read,
        table=pairs.table,
        headline=pairs.headline,
        scored_groups=pairs.scored_groups,
        headline_intervals=pairs.headline_intervals,
        summary_rows=pairs.rows,
        prompt_values=pairs.prompt_values,
        headline_numbers=pairs.headline_numbers,
    )
    kind = declared(kind=PAIRS)
    a, b = explicit.score(RECORDS, seed=3, samples=300), kind.score(RECORDS, seed=3, samples=300)
    assert explicit.summary_json(a) == kind.summary_json(b)
    for part in ("headline", "headline_intervals", "scored_groups", "summary_rows"):
        assert getattr(explicit, part)(a) == getattr(kind, part)(b), part


def test_a_part_given_by_name_wins_over_the_modules_and_the_modules_over_the_kind() -> None:
    def headline(summary: pairs.PairSummary) -> list[tuple[str, float | None]]:
        return [("accuracy", summary.accuracy if isinstance(summary.accuracy, float) else None)]

    bench = declared(kind=PAIRS, headline=headline)
    assert bench.headline is headline and bench.table is pairs.table  # the rest still the kind's
    own = declared(kind=PAIRS, numbers=rmb_scoring, shows=rmb_table, lines=rmb_files)
    assert (own.score, own.summary_type, own.table, own.sample_line) == (
        rmb_scoring.score,
        rmb_scoring.SUMMARY,
        rmb_table.table,
        rmb_files.line,
    )
    assert own.chosen_vs_rejected is True  # the kind's
    assert rmb.BENCHMARK.score is rmb_scoring.score and rmb_package.BENCHMARK.summary_rows is rmb_table.rows


def test_a_part_nothing_gives_is_refused_when_the_benchmark_is_made() -> None:
    with pytest.raises(TypeError, match=r"benchmark 'mine': no score, summary_type, sample_line, read_record"):
        declared()
    with pytest.raises(TypeError, match=r"benchmark 'mine': no score, summary_type, headline, scored_groups"):
        declared(kind=STEPS, shows=pairs)  # the steps kind leaves the numbers to each benchmark
    assert declared(kind=STEPS, numbers=pairs, shows=pairs).process  # given, it is a process benchmark


def test_replace_keeps_the_parts_as_they_are() -> None:
    bench = dataclasses.replace(pairwise.BENCHMARK, title="Pairs again")
    assert bench.title == "Pairs again" and bench.score is pairwise.BENCHMARK.score


def test_every_built_in_declares_its_kind_where_one_fits() -> None:
    assert KINDS == {"pairs": PAIRS, "best-of-n": BEST_OF_N, "ranking": RANKING, "steps": STEPS}
    built_ins = [b for b in registry.benchmarks() if not b.definition]  # not the files other tests defined here
    by_kind = {b.name: (b.chosen_vs_rejected, b.process, b.best_of_n, b.ranking) for b in built_ins}
    assert by_kind["prmbench"] == by_kind["processbench"] == (False, True, False, False)
    assert by_kind["reward-bench-2"] == (False, False, False, False)  # its Ties rated apart: no kind of these
    assert by_kind["rewardmath"] == (False, False, True, False)  # one chosen solution among nine rejected ones
    assert by_kind["if-reward-bench"] == (False, False, False, True)  # a preference graph over several responses
    others = ("prmbench", "processbench", "reward-bench-2", "rewardmath", "if-reward-bench")
    assert all(by_kind[n] == (True, False, False, False) for n in by_kind if n not in others)
    # JudgeBench is a pairs benchmark that differs only in what leads: its score is the kind's, in its name
    summary = judgebench.BENCHMARK.score(RECORDS, samples=50)
    assert summary.benchmark == "judgebench" and judgebench.BENCHMARK.leading(summary)[0] == "accuracy"
    # PRMBench's line is the steps kind's
    assert prmbench.BENCHMARK.sample_line.__self__ == steps.Lines("prmbench", "classification")  # type: ignore[attr-defined]
