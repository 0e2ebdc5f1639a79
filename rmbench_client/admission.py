"""Admission: the check every endpoint of a role passes before it gets work — at start, when it comes back after
being taken out, and when the role's source newly lists it.

An endpoint is admitted when it serves the role's model: the served identity (`model_identity.served_identity`:
the name, vLLM's root path and max_model_len; the vLLM release may differ), the route the model kind needs (a
vLLM reward model on the pooling runner, a DPO model on the generate runner), and, where the model kind takes a
fingerprint (reward, DPO), its probe fingerprint on that very endpoint within `FINGERPRINT_TOLERANCE` of the
role's. A ConfigError means the endpoint serves something else: it stays out, with a warning. Any other error
means it is down: the pool probes it and tries again.

At start the endpoints that answer must agree with each other (there is no other reference), as the preflight
always required; the first of them is the role's identity from then on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from . import constants as C
from .backends.base import Endpoint
from .backends.vllm_features import served_routes
from .errors import ConfigError, EndpointError, RetryableError
from .model_identity import fingerprints_match, same_model, served_identity
from .retry import retry_delay

Fingerprint = Callable[[Endpoint], Awaitable[list[float] | None]]


class AdmissionCheck(Protocol):
    """What the endpoint pool asks before an endpoint gets work."""

    async def start(self, endpoints: list[Endpoint]) -> list[Exception | None]:
        """Per endpoint: None (admitted), a ConfigError (it serves something else) or why it is down. Raises
        EndpointError or ConfigError when none can be admitted."""
        ...

    async def __call__(self, ep: Endpoint) -> None:
        """Return when `ep` may get work; ConfigError when it serves something else, another error when down."""
        ...


# per model kind, the route a vLLM endpoint must list (vLLM 0.32 lists only its runner's), and the fix
ROUTES = {
    "reward": (
        "/pooling",
        "vLLM serves this model with its generate runner; serve the reward model with --runner pooling "
        "--convert classify",
    ),
    "dpo": (
        "/v1/completions",
        "vLLM serves this model with its pooling runner, which gives no log-probs; serve the DPO {role} with "
        "--runner generate",
    ),
}


def describe(identity: dict[str, Any]) -> str:
    """An identity in a warning: what the endpoint serves."""
    return ", ".join(f"{k} {v!r}" for k, v in identity.items() if k != "version" and v is not None)


class Admission:
    """The admission check of one role (see the module docstring)."""

    def __init__(self, role: str, backend: str, kind: str | None = None) -> None:
        self.role = role
        self.backend = backend
        self._route = ROUTES.get(kind or "") if backend == "vllm" else None
        self.identity: dict[str, Any] | None = None  # the role's, settled at start
        self._fingerprint: Fingerprint | None = None
        self._expected: list[float] | None = None
        self._ready = asyncio.Event()  # late joiners wait until the role's fingerprint is known

    async def start(self, endpoints: list[Endpoint]) -> list[Exception | None]:
        found = await asyncio.gather(*(self._first(ep) for ep in endpoints))
        answered = [(ep, f) for ep, f in zip(endpoints, found, strict=True) if isinstance(f, dict)]
        if not answered:
            rejected = [str(f) for f in found if isinstance(f, ConfigError)]
            if rejected:
                raise ConfigError("; ".join(rejected))
            raise EndpointError(f"no {self.role} endpoint is reachable: {'; '.join(str(f) for f in found)}")
        first_ep, first = answered[0]
        for ep, other in answered[1:]:  # servers of one model on different vLLM releases are the same model
            if not same_model(other, first):
                raise ConfigError(
                    f"the {self.role} endpoints serve different models: {first_ep.url} {first}, {ep.url} {other}"
                )
        self.identity = first
        return [None if isinstance(f, dict) else f for f in found]

    async def _first(self, ep: Endpoint) -> dict[str, Any] | Exception:
        """`ep`'s identity after its route check, an overloaded server asked again; else what is wrong."""
        for attempt in range(C.PREFLIGHT_ATTEMPTS):
            try:
                identity = await served_identity(ep, self.backend)
                await self._check_route(ep)
                return identity
            except RetryableError as exc:  # an overloaded server answers later; a dead one never does
                if attempt + 1 == C.PREFLIGHT_ATTEMPTS:
                    return exc
                await asyncio.sleep(retry_delay(attempt, exc.retry_after))
            except (ConfigError, EndpointError) as exc:
                return exc
        raise AssertionError("unreachable")  # the loop returns

    async def _check_route(self, ep: Endpoint) -> None:
        if self._route is not None:
            path, fix = self._route
            if (await served_routes(ep)).lacks(path):
                raise ConfigError(f"endpoint {ep}: no {path} route: {fix.format(role=self.role)}")

    def fingerprinted(self, fingerprint: Fingerprint | None, expected: list[float] | None) -> None:
        """The model kind took the role's fingerprint (None: it has none): from now on every joiner is compared."""
        self._fingerprint = fingerprint if expected is not None else None
        self._expected = expected
        self._ready.set()

    async def verify(self, endpoints: list[Endpoint]) -> list[Endpoint]:
        """At start: every admitted endpoint gives the role's fingerprint, else ConfigError (which is right?).
        Returns those that could not be asked (down since): they are checked when they answer again."""
        if self._fingerprint is None or len(endpoints) < 2:  # one: the role's fingerprint was taken on it
            return []
        found = await asyncio.gather(*map(self._compare, endpoints), return_exceptions=True)
        for problem in found:
            if isinstance(problem, str):
                raise ConfigError(f"the {self.role} endpoints serve different models: {problem}")
            if isinstance(problem, ConfigError | asyncio.CancelledError):
                raise problem
        return [ep for ep, problem in zip(endpoints, found, strict=True) if isinstance(problem, BaseException)]

    async def _compare(self, ep: Endpoint) -> str | None:
        assert self._fingerprint is not None
        found = await self._fingerprint(ep)
        if fingerprints_match(found, self._expected):
            return None
        return (
            f"endpoint {ep} serves {describe(self.identity or {})} with another probe fingerprint (a different "
            f"checkpoint): {_short(found)} where the role's is {_short(self._expected)}"
        )

    async def __call__(self, ep: Endpoint) -> None:
        await self._ready.wait()
        identity = await served_identity(ep, self.backend)
        assert self.identity is not None  # settled by start, before any endpoint can join
        if not same_model(identity, self.identity):
            raise ConfigError(f"endpoint {ep} serves {describe(identity)}, not the role's {describe(self.identity)}")
        await self._check_route(ep)
        if self._fingerprint is not None:
            problem = await self._compare(ep)
            if problem:
                raise ConfigError(problem)


def _short(values: list[float] | None) -> str:
    return (
        "none"
        if values is None
        else "[" + ", ".join(f"{v:.4g}" for v in values[:4]) + (", …]" if len(values) > 4 else "]")
    )
