"""Whether two runs of the same prompts agree, prompt by prompt: the raw numbers each prompt was scored with (a
reward model's or DPO's score of every response, a judge's credit of every comparison, a process model's score of
every step), never only the outcome they lead to.

Two numbers agree within a tolerance `t` when |a - b| <= t * max(1, |a|): relative to the recorded number, absolute
below 1 (the fingerprint's rule, backends/identity.py). A prompt agrees when each of its numbers does and it has as
many; the runs agree when every prompt the recorded run scored was scored again and agrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..examples import PromptScores


def numbers(scores: PromptScores) -> np.ndarray:
    """The raw numbers of a prompt: a judge's credits, a process model's step scores, else every response's score
    (chosen, then rejected)."""
    if scores.results is not None:
        return np.asarray(scores.results, dtype=float)
    if scores.steps is not None:
        return np.asarray(scores.steps, dtype=float)
    return np.asarray([*scores.chosen, *scores.rejected], dtype=float)


def within(recorded: np.ndarray, now: np.ndarray, tolerance: float) -> bool:
    """Whether every number agrees (module docstring); arrays of one shape."""
    return bool(np.all(np.abs(now - recorded) <= tolerance * np.maximum(1.0, np.abs(recorded))))


@dataclass(frozen=True)
class Agreement:
    """The prompts of a recorded run against the same prompts scored again: how many were compared, those whose
    numbers differ beyond the tolerance (or count differently), those the recorded run scored that were not scored
    again, and the largest absolute difference of a number (with its prompt)."""

    tolerance: float
    compared: int
    differ: tuple[str, ...]
    unscored: tuple[str, ...]
    largest: float | None
    largest_at: str | None

    @property
    def agree(self) -> bool:
        return self.compared > 0 and not self.differ and not self.unscored


def agreement(recorded: Sequence[PromptScores], now: Sequence[PromptScores], tolerance: float) -> Agreement:
    """The recorded run's prompts, each against the same prompt (its group and id) scored again."""
    again = {(s.group, s.id): s for s in now}
    differ, unscored = [], []
    largest, largest_at = None, None
    for rec in recorded:
        found = again.get((rec.group, rec.id))
        if found is None:
            unscored.append(rec.id)
            continue
        a, b = numbers(rec), numbers(found)
        if a.shape != b.shape:  # a step list cut at another length: not the same computation
            differ.append(rec.id)
            continue
        if a.size:
            gap = float(np.max(np.abs(b - a)))
            if largest is None or gap > largest:
                largest, largest_at = gap, rec.id
        if not within(a, b, tolerance):
            differ.append(rec.id)
    return Agreement(tolerance, len(recorded) - len(unscored), tuple(differ), tuple(unscored), largest, largest_at)
