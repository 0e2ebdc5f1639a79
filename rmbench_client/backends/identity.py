"""Which model a role's endpoints serve: checked before a run, and part of every score-store key.

`served_identity` asks an endpoint what it serves (`/v1/models`: the name, vLLM's root path and max_model_len; TGI
and TEI: `/info`'s model id and revision); pool/admission.py requires every endpoint of a role to agree before it gets
work. The identity alone cannot tell a retrained checkpoint saved over the same path: each model kind also takes a
*fingerprint* at start (its raw outputs for a fixed probe), and the score store maps (identity, fingerprint) to a
model epoch (`ScoreStore.model_epoch`); a fingerprint that differs beyond `FINGERPRINT_TOLERANCE` is a new model.
"""

from __future__ import annotations

from typing import Any

from .. import constants as C
from ..errors import ConfigError
from .base import Endpoint
from .tei import tei_info
from .tgi import tgi_info
from .vllm import served_models, server_version
from .vllm_features import release


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


def same_model(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two served identities name the same model (servers of one model on different vLLM releases are
    the same model)."""
    return {k: v for k, v in a.items() if k != "version"} == {k: v for k, v in b.items() if k != "version"}


def judge_identity(served: dict[str, Any]) -> dict[str, Any]:
    """What of a served identity tells a model without a fingerprint (a judge) from another: everything the server
    reports (name, path, max_model_len: it caps how long an answer may grow) but the server's patch release — its
    release series (major.minor) stays, as a minor release may change how a model generates."""
    version = served.get("version")
    parts = release(version) if isinstance(version, str) else None
    return served | {"version": ".".join(map(str, parts[:2])) if parts else version}


def interchangeable(a: dict[str, Any], b: dict[str, Any], fingerprinted: bool) -> bool:
    """Whether two endpoints' served identities are one model for the score store, so that either may answer for
    the role (admission's rule is the store's): a model with a fingerprint is told apart by it (its epoch), so any
    vLLM release may serve it (`same_model`); one without (a judge, a critic) is told apart by `judge_identity`,
    which keeps the release series."""
    return same_model(a, b) if fingerprinted else judge_identity(a) == judge_identity(b)


def fingerprints_match(a: list[float] | None, b: list[float] | None, tol: float = C.FINGERPRINT_TOLERANCE) -> bool:
    """Whether two probe fingerprints come from the same model (|a - b| <= tol * max(1, |b|) everywhere)."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b, strict=True))
