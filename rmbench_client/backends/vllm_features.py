"""What a vLLM server offers, read once per endpoint at start-up (never per request): its release (`GET /version`)
and its routes (`GET /openapi.json`). The request shapes that differ between releases follow from them:

- `/pooling` without a `task` runs `token_classify` on 0.13 (one value per token); the client then sends
  `"task": "classify"`, which later releases choose by themselves for a one-label reward head.
- `/v1/completions/render` is missing on 0.13 (404): the token ids of rendered texts then come from `/tokenize`.
- `/inference/v1/generate` is listed only where the server serves it.

Releases checked against real servers here: see docs/servers.md ("Supported vLLM releases").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..errors import EndpointError
from .base import Endpoint
from .transport import request_json

RENDER_PATH = "/v1/completions/render"
GENERATE_PATH = "/inference/v1/generate"
# the first release whose /pooling picks `classify` for a one-label head when no task is sent (0.13 does not)
CLASSIFY_BY_ITSELF = (0, 14)
OLDEST_SUPPORTED = "0.13.0"


class VersionInfo(msgspec.Struct, frozen=True):
    """`GET /version`."""

    version: str


class OpenApi(msgspec.Struct, frozen=True):
    """`GET /openapi.json`: only the route list is read."""

    paths: dict[str, Any] = {}


def release(version: str | None) -> tuple[int, ...] | None:
    """(major, minor, patch) of a version string such as `0.13.0` or `0.20.2+cpu`; None when unreadable."""
    if not version:
        return None
    parts = []
    for piece in version.split("+")[0].split(".")[:3]:
        match = re.match(r"\d+", piece)  # the leading digits: "0rc1" is 0
        if match is None:
            break
        parts.append(int(match.group()))
    return tuple(parts) or None


@dataclass(frozen=True)
class VllmFeatures:
    """A server's release and routes, and the request shapes that follow from them."""

    version: str | None = None
    routes: frozenset[str] = field(default_factory=frozenset)

    @property
    def pooling_task(self) -> dict[str, str]:
        """What a reward request adds: `"task": "classify"` on releases whose /pooling would otherwise answer one
        value per token (0.13); nothing on later ones or when the release is unknown."""
        rel = release(self.version)
        return {"task": "classify"} if rel is not None and rel < CLASSIFY_BY_ITSELF else {}

    @property
    def has_render(self) -> bool:
        """Whether `/v1/completions/render` is served (not on 0.13); True when the route list is unknown."""
        return not self.routes or RENDER_PATH in self.routes

    def lacks(self, path: str) -> bool:
        """Whether the route list is known and `path` is not in it (0.32 lists only its runner's routes)."""
        return bool(self.routes) and path not in self.routes

    @property
    def too_old(self) -> bool:
        rel = release(self.version)
        return rel is not None and rel < release(OLDEST_SUPPORTED)  # type: ignore[operator]


def features_from(version_body: Any, openapi_body: Any) -> VllmFeatures:
    """The features from the two answers (either may be None: a server without that route)."""
    version = msgspec.convert(version_body, VersionInfo).version if isinstance(version_body, dict) else None
    routes: frozenset[str] = frozenset()
    if isinstance(openapi_body, dict):
        routes = frozenset(msgspec.convert(openapi_body, OpenApi).paths)
    return VllmFeatures(version, routes)


async def _optional_get(ep: Endpoint, path: str) -> Any:
    try:
        return await request_json(ep, "GET", path)
    except EndpointError as exc:
        if " HTTP 404" in str(exc):
            return None
        raise


async def detect(ep: Endpoint) -> VllmFeatures:
    """Ask `ep` once for its release and routes."""
    try:
        return features_from(await _optional_get(ep, "/version"), await _optional_get(ep, "/openapi.json"))
    except (msgspec.ValidationError, TypeError):
        return VllmFeatures()
