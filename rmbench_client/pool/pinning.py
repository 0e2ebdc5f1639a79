"""Keeping a prompt's requests on one endpoint per role (`client.same_endpoint_per_prompt`): every score of the
prompt then comes from one server, so a pair is never compared across two engine releases.

The scoring loop sets a `Pin` around a prompt's scoring (a context variable, as provenance.py's collection): the
pool sends the prompt's first request of a role to its best endpoint and the rest there, waiting for that
endpoint's slots. Should that endpoint leave the pool (taken out, gone), the pool raises PinBroken: nothing of the
prompt was stored yet, and the scoring loop scores it again, whole, on another endpoint.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TypeVar

from ..errors import PinBroken


class Member(Protocol):
    """A pool's endpoint as a pin sees it (endpoint_state.EndpointState)."""

    @property
    def url(self) -> str: ...

    @property
    def healthy(self) -> bool: ...

    @property
    def inflight(self) -> int: ...

    @property
    def slots(self) -> int: ...


M = TypeVar("M", bound=Member)


class Pin:
    """The endpoint (its URL) each role's requests of one prompt go to, once the first one chose it."""

    __slots__ = ("urls",)

    def __init__(self) -> None:
        self.urls: dict[str, str] = {}

    def ready(self, role: str, members: Iterable[M]) -> list[M] | None:
        """Where `role`'s next request of the prompt may go: None before its first (any endpoint), else its
        endpoint when that has a free slot, or nothing (wait). PinBroken once that endpoint is out of work."""
        url = self.urls.get(role)
        if url is None:
            return None
        member = next((m for m in members if m.url == url and m.healthy), None)
        if member is None:
            raise PinBroken(f"{role} endpoint {url} left while a prompt's requests were kept on it")
        return [member] if member.inflight < member.slots else []


_PIN: ContextVar[Pin | None] = ContextVar("rmbench_pin", default=None)


def current() -> Pin | None:
    """The pin of the prompt being scored in this task (None: requests go to any endpoint)."""
    return _PIN.get()


@contextmanager
def pinned(on: bool = True) -> Iterator[Pin | None]:
    """Requests sent inside the block (and in tasks started there) stay on one endpoint per role; nothing when
    `on` is False."""
    token = _PIN.set(Pin()) if on else None
    try:
        yield _PIN.get() if on else None
    finally:
        if token is not None:
            _PIN.reset(token)
