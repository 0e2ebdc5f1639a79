"""Each process benchmark judges a step's score against the threshold by its own rule (`Benchmark.step_rule`):
PRMBench's step scored exactly at the threshold is erroneous, ProcessBench's is correct. `--threshold`'s help (of
`run` and `score`) says each benchmark's rule, and what it says is what the benchmark's scoring does at a tie."""

from __future__ import annotations

import pytest
from helpers_cli import cli

from rmbench_client.benchmarks import registry
from rmbench_client.benchmarks.prmbench import scoring as prmbench
from rmbench_client.benchmarks.processbench import scoring as processbench
from rmbench_client.benchmarks.shared.steps import judged_correct
from rmbench_client.examples import PromptScores

T = 0.4


def tie(group: str) -> PromptScores:
    """A solution of two correct steps, each scored exactly at the threshold."""
    return PromptScores("s-0", group, (), (), steps=(T, T), step_labels=(1, 1))


def tie_judged_correct(name: str) -> bool:
    """What the benchmark's own scoring makes of a correct step scored exactly at the threshold."""
    if name == "processbench":  # no step below the threshold: the solution is predicted correct (-1)
        _, predicted = processbench.predictions([tie("gsm8k")], T)
        return bool(predicted[0] == -1)
    counts, _ = prmbench.step_counts([tie("multi_solutions")], T)  # TP: judged correct, FN: judged erroneous
    tp, _, _, fn = counts[0]
    assert tp + fn == 2
    return bool(tp == 2)


@pytest.mark.parametrize("command", ["run", "score"])
def test_the_threshold_help_says_each_benchmarks_rule_as_its_scoring_applies_it(command):
    proc = cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    process = [b for b in registry.benchmarks() if b.process]
    assert {b.name for b in process} == {"prmbench", "processbench"}
    rules = {"at": "correct when its score is at or above T", "above": "correct when its score is above T (a score "
             "equal to T: erroneous)"}  # fmt: skip
    for bench in process:
        correct_at_t = tie_judged_correct(bench.name)
        assert judged_correct(T, T, bench.step_rule) == correct_at_t  # the report page marks steps by step_rule
        said = rules["at" if correct_at_t else "above"]
        assert f"{bench.title}: a step is {said}" in text, text
    # the two differ: one rule for both would be untrue of one of them
    assert tie_judged_correct("processbench") and not tie_judged_correct("prmbench")
