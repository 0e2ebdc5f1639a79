"""What a backend is: an endpoint handle and the Protocols the model kinds use. One file per server kind
implements them (vllm, tgi, tei, sglang); `backends/__init__.py` maps a config's `backend` name to the class.

Every method is one HTTP request, so the endpoint pool's concurrency and rate limit hold per request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import httpx

from ..examples import Message
from ..redaction import masked_url
from .session import Answer

Messages = list[Message]


class Transport(Protocol):
    """Where an endpoint's requests go: the role's aiohttp session (`session.Session`)."""

    async def send(self, method: str, url: httpx.URL | str, headers: dict[str, str], body: bytes | None) -> Answer:
        """One request; a failure to reach the server is httpx's exception (ConnectError, ReadTimeout, ...)."""
        ...


@dataclass(frozen=True)
class Endpoint:
    """One server URL serving one model; the HTTP client (probes, the judge's openai client) and the transport
    (scoring requests) are shared by the endpoints of a role."""

    url: str
    model: str
    client: httpx.AsyncClient = field(repr=False, compare=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # may hold a key
    # the role's aiohttp session: every scoring request goes to it, skipping httpx's per-request objects
    transport: Transport = field(kw_only=True, repr=False, compare=False)

    @cached_property
    def shown(self) -> str:
        """The URL as it may be written or said: its credentials masked (redaction.py); the requests use `url`."""
        return masked_url(self.url)

    def __str__(self) -> str:
        return self.shown


Call = Callable[[Callable[[Endpoint], Awaitable[Any]]], Awaitable[Any]]
"""How a model kind sends one request (a function of the endpoint): `EndpointPool.call`, or `on(ep)`."""


def on(ep: Endpoint) -> Call:
    """A `call` pinned to one endpoint, without retries (admission's checks of that endpoint)."""

    async def call(fn: Callable[[Endpoint], Awaitable[Any]]) -> Any:
        return await fn(ep)

    return call


class TextRewardBackend(Protocol):
    """A reward model scoring client-rendered texts."""

    adds_special_tokens: bool  # the server adds BOS itself: a BOS the template writes must be removed
    max_batch: int | None  # texts per request (None: any number)

    async def rewards_for_texts(self, ep: Endpoint, texts: Sequence[str]) -> list[list[float]]:
        """The head's outputs for each text, in order."""
        ...

    async def tokenize_as_scored(self, ep: Endpoint, text: str) -> list[int]:
        """The token ids the server scores for `text` (special tokens included), for the start-up checks."""
        ...


class LogprobBackend(Protocol):
    """A causal LM giving prompt log-probs of client-rendered texts (DPO)."""

    max_batch: int | None  # texts per request (None: any number)

    async def tokenize_as_scored(self, ep: Endpoint, text: str) -> list[int]: ...

    async def logprobs_of_texts(self, ep: Endpoint, texts: Sequence[str]) -> tuple[list[list[int]], list[list[float]]]:
        """The ids the server scored for each text, and log p(token t | before) for every token after the first."""
        ...

    async def logprobs_of_ids(self, ep: Endpoint, ids: Sequence[list[int]], texts: Sequence[str]) -> list[list[float]]:
        """The same for sequences already tokenized (by the policy): the reference scores identical tokens."""
        ...
