"""One member endpoint of a pool as the pool keeps it (endpoint_pool.py): its requests in flight against its
capacity, its failures in a row, whether it is at work and, while it is not, why and the probe that brings it back;
its recent answers (when, how long: what the outlier rule compares, outliers.py), whether it is on probation (back
from being taken out: one request at a time until one succeeds) and its backoff; what its answers are attributed
to, and how many requests it was sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

import httpx
import msgspec

from .. import constants as C
from ..backends.base import Endpoint
from ..redaction import hidden
from .hedging import Flight, Race
from .outliers import silent_since
from .provenance import Answerer

if TYPE_CHECKING:
    from .admission import Identity

log = logging.getLogger(__name__)


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
        self.flights: set[Flight[EndpointState]] = set()  # its requests on the wire
        now = time.monotonic()
        self.answers: deque[tuple[float, float]] = deque(maxlen=C.OUTLIER_WINDOW)  # (when, seconds) of its latest
        self.last_answer = now  # its latest success (or when it joined)
        self.probation = False  # back from being taken out: one request at a time until one succeeds
        self.proved = True  # a request succeeded since it (re)joined
        self.backoff = 0.0  # the wait before it is tried again after it was last taken out (0: never out)
        self.since = now  # when it last joined or came back
        self.losses = 0  # hedges its requests lost in a row

    @property
    def url(self) -> str:
        return self.endpoint.url

    @property
    def slots(self) -> int:
        """Requests it may have in flight now: one on probation (its canary), else its capacity."""
        return 1 if self.probation else self.capacity

    def take_off(self, race: Race[EndpointState] | None) -> Flight[EndpointState]:
        """A request of it goes on the wire now."""
        flight = Flight(self, time.monotonic(), race)
        self.flights.add(flight)
        return flight

    def landed(self, flight: Flight[EndpointState], answered: bool) -> None:
        """A request of it ended; `answered`: with an answer (its duration joins the recent answers)."""
        self.flights.discard(flight)
        if answered:
            now = time.monotonic()
            self.answers.append((now, now - flight.started))
            self.last_answer = now

    def silent_since(self) -> float:
        """Since when it has answered nothing of its requests outstanding (outliers.silent_since)."""
        return silent_since(self.last_answer, min((f.started for f in self.flights), default=self.last_answer))

    def reports(self, identity: Identity | None) -> None:
        """Its answers from now on are attributed to the release it reports now (when it reports one)."""
        release = (identity or {}).get("version")
        if release is not None and release != self.answerer.release:
            if self.answerer.release is not None:
                log.info("%s endpoint %s now runs vLLM %s (was %s)", self.answerer.role, self.endpoint, release,
                         self.answerer.release)  # fmt: skip
            self.answerer = msgspec.structs.replace(self.answerer, release=release)

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
            self.why = hidden(f"{type(exc).__name__}: {exc}")
            return False
        if response.status_code == 404 and len(self.probe_paths) > 1:
            self.probe_paths.pop(0)
            return await self.answers_probe()
        if response.status_code != 200:
            self.why = f"{self.probe_paths[0]} answered {response.status_code}"
        return response.status_code == 200
