"""The report page of a process benchmark (PRMBench, ProcessBench): the solutions some run judged wrongly, each
with its steps, their labels and every run's step scores; the steps a run misjudged are marked in the browser
(report/assets/process.js).

A step is misjudged when the run's judgement disagrees with its label: each benchmark judges a step by its rule
(`Benchmark.step_rule`): PRMBench correct when its score is above the threshold, ProcessBench when it is not below
it (its prediction is the first step below). Steps
without a label (ProcessBench's after the earliest wrong one) or without a score (an input cut at the length limit)
are never marked; a ProcessBench solution whose scores stop before a decision is listed as a miss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..benchmarks.shared.steps import judged_correct
from ..benchmarks.spec import StepRule
from ..examples import Example, PromptScores, prompt_text
from ..results.summary import RunSummary


def misjudged(rec: PromptScores, threshold: float, rule: StepRule) -> list[int]:
    """The labelled, scored steps whose judgement disagrees with their label."""
    pairs = zip(rec.steps or (), rec.step_labels or (), strict=False)
    return [i for i, (s, label) in enumerate(pairs) if judged_correct(s, threshold, rule) != (label == 1)]


def listed(rec: PromptScores, threshold: float, rule: StepRule) -> bool:
    """Whether the page lists the solution: a step misjudged, or (ProcessBench) scores that stop undecided."""
    if misjudged(rec, threshold, rule):
        return True
    undecided = len(rec.steps or ()) < len(rec.step_labels or ())
    return rule == "not below" and undecided


def run_steps(scores: Sequence[PromptScores], shown: set[str]) -> dict[str, list[float]]:
    """A run's step scores of the solutions the page shows."""
    return {s.id: list(s.steps or ()) for s in scores if s.id in shown}


def solution(ex: Example) -> dict[str, Any]:
    """What the page shows of one solution: question, steps, labels (and PRMBench's reason for the errors)."""
    out = {"id": ex.id, "g": ex.group, "s": "", "p": prompt_text(ex.prompt), "st": list(ex.steps),
           "lb": list(ex.step_labels)}  # fmt: skip
    reason = ex.extra.get("reason")
    return out | ({"why": reason} if isinstance(reason, str) and reason else {})


def shown_ids(rule: StepRule, runs: Sequence[tuple[float, Sequence[PromptScores]]]) -> set[str]:
    """The solutions some run (threshold, scores) misjudged, each step judged by the benchmark's `rule`."""
    return {s.id for threshold, scores in runs for s in scores if listed(s, threshold, rule)}


def prompts(examples: Mapping[str, Example], shown: set[str]) -> list[dict[str, Any]]:
    return [solution(ex) for ex_id, ex in examples.items() if ex_id in shown]


def facts(summary: RunSummary) -> list[str]:
    """What the summary says was left out or found in the data (the page shows them as notes): the run's notes
    and duplicates, and the solutions cut or undecided (blocks both process benchmarks write: read from the JSON
    object)."""
    info = summary.info
    out = list(info.data_notes or [])
    if d := info.duplicates or None:
        out.append(f"{len(d.ids)} later record(s) with a repeated id left out ({d.why}): {', '.join(d.ids)}")
    for key in ("cut", "undecided"):
        if key in summary.raw:
            block = summary.raw[key]
            steps = f", {block['steps']} step(s)" if "steps" in block else ""
            out.append(f"{block['solutions']} solution(s){steps}: {block['why']}")
    return out
