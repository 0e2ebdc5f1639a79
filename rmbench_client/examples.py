"""Typed records at the boundaries: benchmark examples and the scores of one prompt's responses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# PromptScores.details key: how many of a prompt's judge ratings could not be read (a judge writes it, RewardBench
# 2's scoring counts it)
UNPARSED_RATINGS = "unparsed"
Message = dict[str, str]  # {"role": "user" | "assistant" | "system", "content": str}
Prompt = str | tuple[Message, ...]  # one user turn, or a conversation that ends with a user turn


def conversation(prompt: Prompt, response: str | None = None) -> list[Message]:
    """The chat messages of a prompt (a user turn or a multi-turn conversation), and a response if given."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    if response is not None:
        messages.append({"role": "assistant", "content": response})
    return messages


def prompt_text(prompt: Prompt) -> str:
    """A prompt as one text: the user turn itself, or the conversation as `role: content` blocks."""
    if isinstance(prompt, str):
        return prompt
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in prompt)


def comparisons(pairs: tuple[tuple[int, int], ...] | None, chosen: int, rejected: int) -> list[tuple[int, int]]:
    """The (chosen index, rejected index) comparisons scored: `pairs` where a benchmark names them, else every
    chosen response against every rejected one, chosen-major."""
    if pairs is not None:
        return list(pairs)
    return [(c, r) for c in range(chosen) for r in range(rejected)]


def response_lengths(examples: Iterable[Example]) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Prompt id -> (chosen, rejected) response lengths in characters: the input of the length diagnostics."""
    return {ex.id: (tuple(map(len, ex.chosen)), tuple(map(len, ex.rejected))) for ex in examples}


@dataclass(frozen=True)
class Example:
    """One benchmark prompt with its chosen (correct) and rejected (incorrect) responses.

    RM-Bench: three of each (styles concise, detailed, markdown); `group` is the domain, `subgroup` the file's
    subdomain (safety-refuse / safety-response). RewardBench and pairwise data: one of each; `group` is the
    subset. RewardBench 2: the correct answers (one, or several for Ties) and the incorrect ones.
    Process benchmarks (PRMBench, ProcessBench): no chosen or rejected responses but one solution's `steps`, scored
    step by step by a process model kind, and `step_labels`: 1 a correct step, 0 an erroneous one, as far as the
    benchmark labels them (ProcessBench labels the steps up to its earliest wrong one: fewer labels than steps).
    """

    id: str
    benchmark: str
    group: str
    prompt: Prompt
    chosen: tuple[str, ...]
    rejected: tuple[str, ...]
    subgroup: str = ""
    extra: dict[str, object] = field(default_factory=dict, compare=False, hash=False)
    # the (chosen index, rejected index) comparisons the benchmark scores (PPE Correctness: its sampled conflict
    # pairs); None: every chosen response against every rejected one
    pairs: tuple[tuple[int, int], ...] | None = None
    # a solution's steps scored as a process (the prompt is the question), and their labels (1 correct, 0 wrong)
    steps: tuple[str, ...] = ()
    step_labels: tuple[int, ...] = ()
    # what a benchmark breaks its numbers down by besides the group, carried to its scoring (PromptScores.facets)
    facets: tuple[tuple[str, str], ...] = ()
    # each response's steps (chosen first), where a process model may score whole responses step by step (RewardMATH)
    solutions: tuple[tuple[str, ...], ...] = ()

    def comparisons(self) -> list[tuple[int, int]]:
        """The (chosen index, rejected index) comparisons the benchmark scores, chosen-major when all are."""
        return comparisons(self.pairs, len(self.chosen), len(self.rejected))

    def responses(self) -> list[tuple[str, int, str]]:
        """(side, index, text) for every response, chosen first."""
        return [("chosen", i, t) for i, t in enumerate(self.chosen)] + [
            ("rejected", i, t) for i, t in enumerate(self.rejected)
        ]

    def conversation(self, response: str | None = None) -> list[Message]:
        return conversation(self.prompt, response)


@dataclass(frozen=True)
class PromptScores:
    """The scores of one prompt's responses (chosen and rejected, in the example's order).

    A pairwise judge gives no per-response scores but `results`: the credit (1 right, 0 wrong, 0.5 tie or
    unparsed verdict) of each chosen-vs-rejected comparison, chosen-major (RM-Bench 9, RewardBench 1), or of each of
    `pairs` where the benchmark scores only those (the example's `pairs`, carried here for scoring).
    A process model kind gives `steps`: each step's score (its probability of being correct), possibly fewer than
    the example's steps when the server cut the input at its length limit; `step_labels` are the example's, carried
    here for scoring.
    `response_steps`: each response's step scores (chosen first), where a benchmark of whole responses turns them
    into one score per response itself (RewardMATH: a PRM's step scores, by its `--prm_function`).
    `details` holds what explains the numbers in reports (DPO log-prob sums, a judge's answers); never scored.
    `answered_by` names the endpoints whose answers the scores are (pool/provenance.py); never scored either.
    """

    id: str
    group: str
    chosen: tuple[float, ...]
    rejected: tuple[float, ...]
    results: tuple[float, ...] | None = None
    pairs: tuple[tuple[int, int], ...] | None = None
    details: dict[str, Any] | None = field(default=None, compare=False)
    steps: tuple[float, ...] | None = None
    step_labels: tuple[int, ...] | None = None
    answered_by: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    response_steps: tuple[tuple[float, ...], ...] | None = None
    # the example's facets (name, value): what a benchmark breaks its numbers down by besides the group
    # (IF-RewardBench: the responding model, the turn, the number of constraints)
    facets: tuple[tuple[str, str], ...] = ()
