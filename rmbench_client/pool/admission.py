"""Admission: the check every endpoint of a role passes before it gets work — at start, when it comes back after
being taken out, when the role's source newly lists it, and on every new connection to it (without the route; for a
fingerprinted kind, by its fingerprint and vLLM's release alone).

An endpoint is admitted when it serves the role's model as the score store tells models apart
(`backends.identity.interchangeable`): the served identity (the name, vLLM's root path and max_model_len; for a model
without a fingerprint — a judge, a critic — the vLLM release series too, which its store keys carry), the route the
model kind needs (a vLLM reward model or native PRM on the pooling runner, a DPO model or a PRM read by log-probs on
the generate runner), and, where the model kind takes a fingerprint (reward, DPO, PRM), its probe fingerprint on
that very endpoint within `FINGERPRINT_TOLERANCE` of the role's. A ConfigError means the endpoint serves something
else: it stays out, with a warning, and is checked again later. Any other error means it is down: the pool probes
it and tries again. Each check returns the endpoint's served identity (its vLLM release: what answered).

At start the endpoints that answer must agree with each other (there is no other reference), as the preflight
always required; the first of them is the role's identity from then on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .. import constants as C
from ..backends.base import Endpoint
from ..backends.identity import fingerprints_match, interchangeable, served_identity
from ..backends.retry import retry_delay
from ..backends.vllm import server_version
from ..backends.vllm_features import served_routes
from ..errors import ConfigError, EndpointError, RetryableError

Fingerprint = Callable[[Endpoint], Awaitable[list[float] | None]]
Identity = dict[str, Any]  # what an endpoint reports it serves (backends.identity.served_identity)


class AdmissionCheck(Protocol):
    """What the endpoint pool asks before an endpoint gets work."""

    async def start(self, endpoints: list[Endpoint]) -> list[Identity | Exception]:
        """Per endpoint: its served identity (admitted), a ConfigError (it serves something else) or why it is down.
        Raises EndpointError or ConfigError when none can be admitted."""
        ...

    async def __call__(self, ep: Endpoint) -> Identity:
        """`ep`'s served identity when it may get work; ConfigError when it serves something else, another error
        when down."""
        ...

    async def recheck(self, ep: Endpoint) -> Identity:
        """The same for an endpoint at work whose server may have changed (a new connection to it, the end of
        scoring), without the route (its fingerprint shows the route works); a fingerprinted kind's by its
        fingerprint, and its identity then holds vLLM's release alone (nothing where it is not vLLM)."""
        ...


# per model kind (the config's type; a PRM's with its method), the route a vLLM endpoint must list (vLLM 0.32
# lists only its runner's), and the fix
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
    "prm-pooling": (
        "/pooling",
        "vLLM serves this model with its generate runner; a PRM needs its pooling runner (Qwen2ForProcessRewardModel)",
    ),
    "prm-logprobs": (
        "/v1/completions",
        "vLLM serves this model with its pooling runner, which gives no log-probs; serve the PRM read by log-probs "
        "with --runner generate",
    ),
}
UNFINGERPRINTED = ("judge", "prm-critic")  # model kinds whose store keys carry the served identity, not a fingerprint


def kind_of(model_type: str, prm_method: str) -> str:
    """The admission kind of a config's model type (a PRM's names its method)."""
    return f"prm-{prm_method}" if model_type == "prm" else model_type


def describe(identity: dict[str, Any], release: bool = False) -> str:
    """An identity in a warning: what the endpoint serves (with its vLLM release where that tells models apart)."""
    shown = {k: v for k, v in identity.items() if (release or k != "version") and v is not None}
    return ", ".join(f"{'vLLM' if k == 'version' else k} {v!r}" for k, v in shown.items())


class Admission:
    """The admission check of one role (see the module docstring)."""

    def __init__(self, role: str, backend: str, kind: str | None = None) -> None:
        self.role = role
        self.backend = backend
        self._route = ROUTES.get(kind or "") if backend == "vllm" else None
        self.by_fingerprint = kind not in UNFINGERPRINTED  # else the release series tells models apart
        self.identity: dict[str, Any] | None = None  # the role's, settled at start
        self._fingerprint: Fingerprint | None = None
        self._expected: list[float] | None = None
        self._ready = asyncio.Event()  # late joiners wait until the role's fingerprint is known

    async def start(self, endpoints: list[Endpoint]) -> list[Identity | Exception]:
        found = await asyncio.gather(*(self._first(ep) for ep in endpoints))
        answered = [(ep, f) for ep, f in zip(endpoints, found, strict=True) if isinstance(f, dict)]
        if not answered:
            rejected = [str(f) for f in found if isinstance(f, ConfigError)]
            if rejected:
                raise ConfigError("; ".join(rejected))
            raise EndpointError(f"no {self.role} endpoint is reachable: {'; '.join(str(f) for f in found)}")
        first_ep, first = answered[0]
        for ep, other in answered[1:]:
            if not interchangeable(other, first, self.by_fingerprint):
                raise ConfigError(f"the {self.role} endpoints serve different models: {first_ep.url} {first}, "
                                  f"{ep.url} {other}{self._series_note(first, other)}")  # fmt: skip
        self.identity = first
        return found

    def _series_note(self, ours: Identity, other: Identity) -> str:
        """Why two identities that differ only in their vLLM release are two models here."""
        if self.by_fingerprint or {**other, "version": None} != {**ours, "version": None}:
            return ""
        return (f" (the {self.role}'s answers are stored per vLLM release series, as a minor release may change how "
                "a model generates: serve one series, or score each apart)")  # fmt: skip

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

    async def __call__(self, ep: Endpoint) -> Identity:
        await self._ready.wait()
        identity = await self._served(ep)
        await self._check_route(ep)
        await self._same_fingerprint(ep)
        return identity

    async def recheck(self, ep: Endpoint) -> Identity:
        if self._fingerprint is not None:
            # The fingerprint is the model's identity in the store (its epoch): a new connection of a fingerprinted
            # role asks it, and vLLM's release alone of what the server reports (two requests instead of three:
            # /v1/models is not asked again; at 64 endpoints the checks were most of a run's requests). The release
            # is what its answers are attributed to: a rolling upgrade behind the URL is recorded as it happens. A
            # server that is the same weights under another name refuses the role's requests.
            await self._same_fingerprint(ep)
            if self.backend != "vllm":
                return {}  # its release is not read (TGI, TEI): its answers keep what it was admitted with
            release = await server_version(ep)
            return {"version": release} if release is not None else {}
        return await self._served(ep)  # without a fingerprint (a judge): its name, path, length and release series

    async def _served(self, ep: Endpoint) -> Identity:
        """`ep`'s served identity; ConfigError when it is not the role's model (as the store tells models apart)."""
        identity = await served_identity(ep, self.backend)
        assert self.identity is not None  # settled by start, before any endpoint can join
        # a release the role's start could not read (its /version refused then: a 429) tells nothing apart later
        seen = identity if self.identity.get("version") is not None else {**identity, "version": None}
        if not interchangeable(seen, self.identity, self.by_fingerprint):
            shown, note = not self.by_fingerprint, self._series_note(self.identity, identity)
            raise ConfigError(f"endpoint {ep} serves {describe(identity, shown)}, not the role's "
                              f"{describe(self.identity, shown)}{note}")  # fmt: skip
        return identity

    async def _same_fingerprint(self, ep: Endpoint) -> None:
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
