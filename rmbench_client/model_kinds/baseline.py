"""Baselines that need no server: they show what pure style preference scores on the benchmarks.

- random: a seeded uniform score per (prompt, response), the chance line;
- longer: the response length in characters (a longer-wins judge);
- markdown: how much markdown the response carries (headers, list items, emphasis, code, tables).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..backends.base import Endpoint
from ..examples import Example, prompt_text
from .base import Unit

_MARKDOWN = re.compile(r"^\s{0,3}#{1,6}\s|^\s*(?:[-*+]|\d+\.)\s|\*\*|__|`|^\s*\|", re.MULTILINE)


def markdown_weight(text: str) -> float:
    return float(len(_MARKDOWN.findall(text)))


class BaselineModel:
    pairwise = False

    def __init__(self, name: str, seed: int = 0) -> None:
        self.name = name
        self.seed = seed
        self.identity: dict[str, Any] = {"kind": "baseline", "name": name, "seed": seed if name == "random" else None}
        self.warnings: list[str] = []

    async def check(self) -> None:
        return None

    async def fingerprint(self, role: str, ep: Endpoint) -> list[float] | None:
        return None  # no server

    def units(self, ex: Example) -> list[Unit]:
        text = prompt_text(ex.prompt)
        return [Unit(f"{text}\0{r}", (text, r)) for _, _, r in ex.responses()]

    def _one(self, prompt: str, response: str) -> float:
        if self.name == "longer":
            return float(len(response))
        if self.name == "markdown":
            return markdown_weight(response)
        digest = hashlib.sha256(f"{self.seed}\0{prompt}\0{response}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2.0**64

    async def score(self, ex: Example, units: list[Unit]) -> list[Any]:
        return [self._one(*u.payload) for u in units]

    def merge(self, values: list[Any]) -> list[Any]:
        return values

    def reduce(self, value: Any) -> float:
        return float(value)

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        return None
