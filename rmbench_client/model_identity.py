"""Which model a role's endpoints serve: checked before a run, and part of every score-store key.

`preflight` asks every endpoint what it serves (`/v1/models`: the name, vLLM's root path and max_model_len; TGI and
TEI: `/info`'s model id and revision) and requires the reachable ones to agree. The identity alone cannot tell a
retrained checkpoint saved over the same path: each model kind also takes a *fingerprint* at start (its raw
outputs for a fixed probe), and the score store maps (identity, fingerprint) to a model epoch
(`ScoreStore.model_epoch`); a fingerprint that differs beyond `FINGERPRINT_TOLERANCE` is a new model.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from . import constants as C
from .backends.base import Endpoint
from .backends.tei import tei_info
from .backends.tgi import tgi_info
from .backends.vllm import served_models, server_version
from .backends.vllm_features import release
from .errors import ConfigError, EndpointError, RetryableError
from .retry import retry_delay

log = logging.getLogger(__name__)


async def served_identity(ep: Endpoint, backend: str) -> dict[str, Any]:
    """What `ep` reports about the model it serves; ConfigError when it does not serve `ep.model`."""
    if backend == "tgi":
        tgi = await tgi_info(ep)
        return {"model_id": tgi.model_id, "model_sha": tgi.model_sha, "max_input_tokens": tgi.max_input_tokens}
    if backend == "tei":
        tei = await tei_info(ep)
        return {"model_id": tei.model_id, "model_sha": tei.model_sha, "max_input_length": tei.max_input_length}
    cards = (await served_models(ep)).data
    for card in cards:
        if card.id == ep.model:
            version = await server_version(ep)
            return {"id": card.id, "root": card.root, "max_model_len": card.max_model_len, "version": version}
    served = ", ".join(card.id for card in cards) or "nothing"
    alike = [card.id for card in cards if card.id.lower() == ep.model.lower()]
    if alike:  # served names are case-sensitive
        raise ConfigError(f"endpoint {ep.url} serves {alike[0]!r}, not {ep.model!r}: names are case-sensitive")
    raise ConfigError(f"endpoint {ep.url} does not serve model {ep.model!r} (it serves {served})")


async def _identity_or_problem(ep: Endpoint, backend: str) -> dict[str, Any] | str:
    for attempt in range(C.PREFLIGHT_ATTEMPTS):
        try:
            return await served_identity(ep, backend)
        except RetryableError as exc:  # an overloaded server answers later; a dead one never does
            if attempt + 1 == C.PREFLIGHT_ATTEMPTS:
                return str(exc)
            await asyncio.sleep(retry_delay(attempt, exc.retry_after))
        except ConfigError:
            raise
        except EndpointError as exc:
            return str(exc)
    raise AssertionError("unreachable")  # the loop returns or raises


async def preflight(role: str, endpoints: list[Endpoint], backend: str) -> dict[str, Any]:
    """The model identity the role's reachable endpoints agree on; EndpointError when none is reachable,
    ConfigError when one serves another model or they serve different ones."""
    found = await asyncio.gather(*(_identity_or_problem(ep, backend) for ep in endpoints))
    identities = [(ep, f) for ep, f in zip(endpoints, found, strict=True) if isinstance(f, dict)]
    if not identities:
        problems = "; ".join(f for f in found if isinstance(f, str))
        raise EndpointError(f"no {role} endpoint is reachable: {problems}")
    for ep, problem in zip(endpoints, found, strict=True):
        if isinstance(problem, str):
            log.warning("%s endpoint %s not reachable yet (%s); it joins when it answers", role, ep, problem)
    first_ep, first = identities[0]
    for ep, other in identities[1:]:  # servers of one model on different vLLM releases are the same model
        if {k: v for k, v in other.items() if k != "version"} != {k: v for k, v in first.items() if k != "version"}:
            raise ConfigError(f"the {role} endpoints serve different models: {first_ep.url} {first}, {ep.url} {other}")
    return first


def judge_identity(served: dict[str, Any]) -> dict[str, Any]:
    """What of a served identity tells a model without a fingerprint (a judge) from another: everything the server
    reports (name, path, max_model_len: it caps how long an answer may grow) but the server's patch release — its
    release series (major.minor) stays, as a minor release may change how a model generates."""
    version = served.get("version")
    parts = release(version) if isinstance(version, str) else None
    return served | {"version": ".".join(map(str, parts[:2])) if parts else version}


def fingerprints_match(a: list[float] | None, b: list[float] | None, tol: float = C.FINGERPRINT_TOLERANCE) -> bool:
    """Whether two probe fingerprints come from the same model (|a - b| <= tol * max(1, |b|) everywhere)."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b, strict=True))
