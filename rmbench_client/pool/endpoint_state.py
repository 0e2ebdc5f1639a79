"""One member endpoint of a pool as the pool keeps it (endpoint_pool.py): its requests in flight against its
capacity, its failures in a row, whether it is at work and, while it is not, why and the probe that brings it back;
what its answers are attributed to, and how many requests it was sent.
"""

from __future__ import annotations

import asyncio

import httpx

from .. import constants as C
from ..backends.base import Endpoint
from .provenance import Answerer


class EndpointState:
    """Book-keeping of one member endpoint."""

    def __init__(self, endpoint: Endpoint, capacity: int, answerer: Answerer) -> None:
        self.endpoint = endpoint
        self.capacity = capacity
        self.answerer = answerer  # what its answers are attributed to
        self.inflight = 0
        self.failures = 0  # consecutive
        self.healthy = True
        self.why = ""  # why it is out, while it is
        self.probe: asyncio.Task[None] | None = None
        self.probe_paths = list(C.PROBE_PATHS)
        self.sent = 0

    def owns(self, url: str) -> bool:
        """Whether `url` is on this endpoint (its base URL, then nothing, a path or a query)."""
        base = self.endpoint.url
        return url.startswith(base) and (len(url) == len(base) or url[len(base)] in "/?")

    async def answers_probe(self) -> bool:
        """GET the endpoint's probe path; a 404 means it has none (hosted APIs have no /health): try the next.
        When it does not answer 200, `why` says how it answered."""
        ep = self.endpoint
        try:
            response = await ep.client.get(ep.url + self.probe_paths[0], headers=ep.headers)
            await response.aclose()
        except httpx.HTTPError as exc:
            self.why = f"{type(exc).__name__}: {exc}"
            return False
        if response.status_code == 404 and len(self.probe_paths) > 1:
            self.probe_paths.pop(0)
            return await self.answers_probe()
        if response.status_code != 200:
            self.why = f"{self.probe_paths[0]} answered {response.status_code}"
        return response.status_code == 200
