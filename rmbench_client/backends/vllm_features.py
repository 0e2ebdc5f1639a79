"""What a vLLM server's route list says, read once per endpoint at start-up (`GET /openapi.json`), and release
numbers compared as tuples. vLLM 0.32 lists only its runner's routes: a reward model on the generate runner has no
`/pooling`, a policy on the pooling runner no `/v1/completions`; the start-up checks name the flags that fix it.
0.13 lists every route whatever the runner, so nothing is concluded from its list."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
from packaging.version import InvalidVersion, Version

from ..errors import EndpointError
from .base import Endpoint
from .transport import request_json

OLDEST_SUPPORTED = "0.13.0"


class OpenApi(msgspec.Struct, frozen=True):
    """`GET /openapi.json`: only the route list is read."""

    paths: dict[str, Any] = {}


def release(version: str | None) -> tuple[int, ...] | None:
    """(major, minor, patch) of a version string such as `0.13.0`, `0.20.2+cpu` or `0.11.0rc1` (PEP 440, read by
    `packaging`); None when unreadable."""
    try:
        return Version(version).release[:3] if version else None
    except InvalidVersion:
        return None


@dataclass(frozen=True)
class Routes:
    """A server's route list (empty: unknown)."""

    paths: frozenset[str] = field(default_factory=frozenset)

    def lacks(self, path: str) -> bool:
        """Whether the route list is known and `path` is not in it."""
        return bool(self.paths) and path not in self.paths


def routes_from(openapi_body: Any) -> Routes:
    try:
        return Routes(frozenset(msgspec.convert(openapi_body, OpenApi).paths))
    except msgspec.ValidationError:
        return Routes()


async def served_routes(ep: Endpoint) -> Routes:
    """Ask `ep` once for its route list; unknown on a server without `/openapi.json`."""
    try:
        return routes_from(await request_json(ep, "GET", "/openapi.json"))
    except EndpointError as exc:
        if " HTTP 404" in str(exc):
            return Routes()
        raise
