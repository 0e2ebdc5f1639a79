"""Baselines that need no server: they show what pure style preference scores on the benchmarks.

- random: a seeded uniform score per (prompt, response), the chance line; on a process benchmark one per step;
- longer: the response length in characters (a longer-wins judge);
- markdown: how much markdown the response carries (headers, list items, emphasis, code, tables).

On a process benchmark (PRMBench, ProcessBench) only `random` has a meaning: a step's score there is its probability
of being correct, read against a threshold, which a length or a markdown count is not.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..errors import ConfigError
from ..examples import Example, prompt_text
from .base import Unit

_MARKDOWN = re.compile(r"^\s{0,3}#{1,6}\s|^\s*(?:[-*+]|\d+\.)\s|\*\*|__|`|^\s*\|", re.MULTILINE)


def markdown_weight(text: str) -> float:
    return float(len(_MARKDOWN.findall(text)))


class BaselineModel:
    pairwise = False

    def __init__(self, name: str, seed: int = 0, process: bool = False) -> None:
        if process and name != "random":
            raise ConfigError(
                f"baseline:{name} has no per-step score for a process benchmark (baseline:random has one)"
            )
        self.name = name
        self.seed = seed
        self.process = process  # one raw value per solution: its steps' scores
        self.identity: dict[str, Any] = {"kind": "baseline", "name": name, "seed": seed if name == "random" else None}
        if process:
            self.identity["process"] = True
        self.warnings: list[str] = []

    async def check(self) -> None:
        return None

    def units(self, ex: Example) -> list[Unit]:
        text = prompt_text(ex.prompt)
        if self.process:  # the step index is part of each step's hash: a step repeated in a solution differs
            return [Unit("\0".join((text, *ex.steps)), (text, ex.steps))]
        return [Unit(f"{text}\0{r}", (text, r)) for _, _, r in ex.responses()]

    def _uniform(self, *parts: object) -> float:
        digest = hashlib.sha256("\0".join(map(str, (self.seed, *parts))).encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2.0**64

    def _one(self, prompt: str, response: str) -> float:
        if self.name == "longer":
            return float(len(response))
        if self.name == "markdown":
            return markdown_weight(response)
        return self._uniform(prompt, response)

    async def score(self, ex: Example, units: list[Unit]) -> list[Any]:
        if self.process:
            payloads = (u.payload for u in units)
            return [[self._uniform(text, i, s) for i, s in enumerate(steps)] for text, steps in payloads]
        return [self._one(*u.payload) for u in units]

    def merge(self, values: list[Any]) -> list[Any]:
        return values

    def reduce(self, value: Any) -> float:
        return float(value)

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        return None
