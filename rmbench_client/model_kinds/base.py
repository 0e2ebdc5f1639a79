"""The Protocol every model kind implements (reward model, DPO pair, judge, baseline), and its work unit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..backends.base import Endpoint
from ..examples import Example


@dataclass(frozen=True)
class Unit:
    """One thing to score: its key material (exactly what determines the server's computation: the rendered text
    or token ids it is sent, or the messages for a server-side template) and what `score` needs to send it. A unit
    that concerns one role only (DPO's policy or reference log-probs) names it: its key covers that role alone."""

    material: str
    payload: Any
    role: str | None = None


class ModelKind(Protocol):
    """What the runner needs from a model kind."""

    pairwise: bool  # units are (chosen, rejected) comparisons (a pairwise judge), not single responses
    # a process model kind: one raw value per example, the list of its steps' scores (each step's probability of
    # being correct, fewer than the steps when the input was cut at the length limit); scoring_loop.prompt_scores puts
    # them in PromptScores.steps (`reduce` is not called for it)
    process: bool

    @property
    def identity(self) -> dict[str, Any]:
        """What every store key covers besides the unit's material: the kind, backend, template and options, and
        per role the model's identity as its servers report it with a probe fingerprint (`models`)."""
        ...

    @property
    def warnings(self) -> list[str]:
        """What the user should know about the numbers (a doubled BOS, boundary merges, unparsed verdicts)."""
        ...

    async def check(self) -> None:
        """Start-up checks against the servers (templates, BOS, identity, fingerprint); ConfigError if unusable."""
        ...

    async def fingerprint(self, role: str, ep: Endpoint) -> list[float] | None:
        """`role`'s probe fingerprint taken on `ep` alone, as `check` took the role's (None: the kind has none);
        admission compares it before `ep` gets work."""
        ...

    def units(self, ex: Example) -> list[Unit]:
        """The prompt's units: one per response (chosen first), or per comparison for a pairwise judge."""
        ...

    async def score(self, ex: Example, units: list[Unit]) -> list[Any]:
        """Raw values (JSON-serialisable) for the units, in order; raises EndpointError subclasses."""
        ...

    def merge(self, values: list[Any]) -> list[Any]:
        """One raw value per response (or comparison) from the prompt's unit values, in `units` order."""
        ...

    def reduce(self, value: Any) -> float:
        """One score (or a judge's credit) from a raw value."""
        ...

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        """What explains a prompt's numbers in reports (log-prob sums, a judge's answers), or None."""
        ...


@runtime_checkable
class SharedRequests(Protocol):
    """A model kind whose unit values depend on the units alone, not on their prompt (a reward model's texts): the
    units of several prompts may then go out together, `units_per_request` at most, which spreads the cost of a
    request (HTTP, the store's commit) over more sequences."""

    @property
    def units_per_request(self) -> int:
        """The most units of several prompts sent in one call of `score_units` (0: each prompt on its own)."""
        ...

    async def score_units(self, units: list[Unit]) -> list[Any]:
        """Raw values for the units (of one or several prompts), in order; raises EndpointError subclasses."""
        ...
