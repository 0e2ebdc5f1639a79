"""A process model kind on a benchmark of whole responses whose responses come in steps (`Example.solutions`:
RewardMATH): one unit per response, each scored as the solution of a process benchmark is; its value that solution's
step scores, made one score per response by the model kind's `reduce` (`prm.function`)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from ..errors import SampleError
from ..examples import Example
from .base import Unit


def split(ex: Example) -> list[Example]:
    """Each response's steps as an example of one solution (the question its prompt)."""
    return [dataclasses.replace(ex, steps=steps, step_labels=(), solutions=()) for steps in ex.solutions]


class EachSolution:
    """`units` and `score` of a process model kind, for one solution (`solution_units`, `solution_score`: one unit
    each) or, where the example holds several responses' steps, for each in turn."""

    def solution_units(self, ex: Example) -> list[Unit]:
        raise NotImplementedError

    async def solution_score(self, ex: Example, units: list[Unit]) -> list[Any]:
        raise NotImplementedError

    def units(self, ex: Example) -> list[Unit]:
        if not ex.solutions:
            return self.solution_units(ex)
        units = [self.solution_units(sub) for sub in split(ex)]
        assert all(len(u) == 1 for u in units)  # one unit per solution: the values line up with the responses
        return [u for one in units for u in one]

    async def score(self, ex: Example, units: list[Unit]) -> list[Any]:
        if not ex.solutions:
            return await self.solution_score(ex, units)
        subs = split(ex)
        found = await asyncio.gather(*(self.solution_score(sub, [u]) for sub, u in zip(subs, units, strict=True)))
        values = [v for one in found for v in one]
        for k, value in enumerate(values):
            if not value["steps"]:  # cut at the length limit before its first step's end
                raise SampleError(f"prompt {ex.id}: response {k} has no step scored (cut at the server's "
                                  "max_model_len before its first step ended): no score to make of it")  # fmt: skip
        return values
