"""The Protocol every model kind implements (reward model, DPO pair, judge, baseline), and its work unit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..examples import Example


@dataclass(frozen=True)
class Unit:
    """One thing to score: its key material (exactly what determines the server's computation: the rendered text
    or token ids it is sent, or the messages for a server-side template) and what `score` needs to send it."""

    material: str
    payload: Any


WHOLE: tuple[str, ...] = ("",)  # the parts of a value stored whole


class ModelKind(Protocol):
    """What the runner needs from a model kind."""

    pairwise: bool  # units are (chosen, rejected) comparisons (a pairwise judge), not single responses

    @property
    def parts(self) -> tuple[str, ...]:
        """How a unit's value is stored: whole (`WHOLE`), or in one part per role (DPO: policy, reference), so
        that a role's numbers are reused whatever else a run asks for (`dpo.reward: ratio`, then `avg`)."""
        ...

    def part_identity(self, identity: dict[str, Any], part: str) -> dict[str, Any]:
        """What the keys of `part` cover: the run's identity (models already replaced by epochs) restricted to
        what that part's numbers depend on."""
        ...

    def split(self, value: Any) -> dict[str, Any]:
        """A unit's value as its parts."""
        ...

    def join(self, parts: dict[str, Any]) -> Any:
        """A unit's value from its parts."""
        ...

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

    def units(self, ex: Example) -> list[Unit]:
        """The prompt's units: one per response (chosen first), or per comparison for a pairwise judge."""
        ...

    async def score(self, ex: Example, units: list[Unit], parts: tuple[str, ...]) -> list[Any]:
        """Raw values (JSON-serialisable) for the units, in order, holding at least `parts`; raises EndpointError
        subclasses."""
        ...

    def reduce(self, value: Any) -> float:
        """One score (or a judge's credit) from a raw value."""
        ...

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        """What explains a prompt's numbers in reports (log-prob sums, a judge's answers), or None."""
        ...


def epochs_only(identity: dict[str, Any]) -> dict[str, Any]:
    """The identity with each role's model as its epoch alone: the epoch is the model (its fingerprint), so the
    served name, path or max_model_len, which a restart may change, are not part of any key."""
    models = identity.get("models")
    return identity | {"models": {role: m["epoch"] for role, m in models.items()}} if models else identity


class WholeValue:
    """For model kinds whose unit values are stored whole."""

    parts: tuple[str, ...] = WHOLE

    def part_identity(self, identity: dict[str, Any], part: str) -> dict[str, Any]:
        return epochs_only(identity)

    def split(self, value: Any) -> dict[str, Any]:
        return {"": value}

    def join(self, parts: dict[str, Any]) -> Any:
        return parts[""]
