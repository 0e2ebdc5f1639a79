"""Which endpoints are members of a role's pool: read from the role's source (discovery.py), each admitted
(admission.py) before it gets work.

`start` reads the source and admits what passes; an endpoint down at start, and one that serves another model, is
tried again — soon at first, then every `probe_interval` — until it passes, and then joins: a server restarted with
the right model is taken back, a rejected one never gets work. The source is read again every `refresh_interval`
for the whole run: a URL it newly lists is admitted first; a member it no longer lists leaves the pool, its requests
in flight ending as they would (one that fails goes to another endpoint: nothing is lost or counted twice). A read
that fails, or does not answer in time, leaves everything as it was: the last complete list stands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from .. import constants as C
from ..backends.base import Endpoint
from ..errors import ConfigError, EndpointError, RmbError
from ..redaction import masked_url

if TYPE_CHECKING:
    from .admission import AdmissionCheck, Identity
    from .discovery import EndpointSource

log = logging.getLogger(__name__)


class Pool(Protocol):
    """What membership changes in the endpoint pool."""

    role: str

    @property
    def endpoints(self) -> list[Endpoint]: ...

    def join(self, ep: Endpoint, identity: Identity | None, about: dict[str, str] | None = None) -> None: ...

    def leave(self, url: str) -> None: ...

    def reassess(self) -> None: ...


class Membership:
    """The listed endpoints of one pool that are not members yet (down, or serving another model), and the source
    read that decides what is listed."""

    def __init__(
        self,
        pool: Pool,
        source: EndpointSource,
        make: Callable[[str], Endpoint],
        admission: AdmissionCheck,
        refresh_interval: float,
        probe_interval: float,
    ) -> None:
        self._pool = pool
        self.role = pool.role
        self._source = source
        self._make = make
        self._admission = admission
        self._refresh_interval = refresh_interval
        self._probe_interval = probe_interval
        self._trying: dict[str, asyncio.Task[None]] = {}  # listed, not members: admission tried until it passes
        self._why: dict[str, tuple[bool, str]] = {}  # each such URL: (it serves another model, why it is out)
        self._listed: list[str] = []  # the last complete list
        self._refresher: asyncio.Task[None] | None = None
        self._unread = ""  # why the last read failed, while reads fail
        self.reads = 0

    async def start(self) -> None:
        """Read the source, admit what passes, try the others later, and re-read the source from now on."""
        try:
            urls = await self._read()
        except RmbError:
            raise
        except Exception as exc:  # a registry's own error, or no answer in time: one line, no traceback
            raise EndpointError(f"cannot read the {self.role} endpoints: {type(exc).__name__}: {exc}") from None
        listed = [self._make(url) for url in urls]
        if not listed:
            raise EndpointError(f"no {self.role} endpoint is listed")
        for ep, found in zip(listed, await self._admission.start(listed), strict=True):
            if not isinstance(found, Exception):
                self._pool.join(ep, found, self._about(ep.url))
                continue
            if not isinstance(found, ConfigError):
                log.warning("%s endpoint %s not reachable yet (%s); it joins when it answers and passes the "
                            "identity check", self.role, ep, found)  # fmt: skip
            self._try(ep, found, at_once=False)
        self._listed = urls
        self._refresher = asyncio.get_running_loop().create_task(self._refresh_forever())

    def reject(self, ep: Endpoint, problem: Exception) -> None:
        """A member found serving another model (it has left the pool): checked again until it passes."""
        if ep.url in self._listed and ep.url not in self._trying:
            self._try(ep, problem, at_once=False)

    def outside(self) -> dict[str, tuple[bool, str]]:
        """Each listed URL that is no member: (whether it serves another model, why it is out)."""
        return dict(self._why)

    def _try(self, ep: Endpoint, problem: Exception | None, at_once: bool) -> None:
        if problem is not None:
            self._note(ep.url, problem)
        self._trying[ep.url] = asyncio.get_running_loop().create_task(self._join(ep, at_once))

    def _note(self, url: str, problem: Exception) -> None:
        """Why `url` is out now; a change between down and serving another model is said, and may end the wait."""
        rejected = isinstance(problem, ConfigError)
        before = self._why.get(url)
        self._why[url] = (rejected, str(problem))
        if rejected and before != self._why[url]:
            log.warning("%s endpoint %s is left out: %s (checked again every %.3gs)", self.role, masked_url(url),
                        problem, self._probe_interval)  # fmt: skip
        elif not rejected:
            log.debug("%s endpoint %s not admitted yet: %s", self.role, masked_url(url), problem)
        if before is None or before[0] != rejected:
            self._pool.reassess()

    async def _join(self, ep: Endpoint, at_once: bool) -> None:
        """Try admission, soon at first and then less often, until `ep` passes; then it joins."""
        interval = min(C.ENDPOINT_FIRST_PROBE_S, self._probe_interval)
        if not at_once:
            await asyncio.sleep(interval)
        while True:
            try:
                identity = await self._admission(ep)
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a ConfigError: it serves something else; anything else: it is down for now
                self._note(ep.url, exc)
            interval = min(interval * 2, self._probe_interval)
            await asyncio.sleep(interval)
        del self._trying[ep.url]
        self._why.pop(ep.url, None)
        log.info("%s endpoint %s joins (identity checked)", self.role, ep)
        self._pool.join(ep, identity, self._about(ep.url))

    def _about(self, url: str) -> dict[str, str] | None:
        """Where the source says `url`'s server runs (a Ray replica and its node), when it says."""
        about = getattr(self._source, "about", None)
        found = about(url) if callable(about) else None
        return {k: str(v) for k, v in found.items() if k in ("replica", "node") and v} if found else None

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_interval)
            await self._refresh()

    async def _read(self) -> list[str]:
        """The source's URLs now, each once; a source that does not answer in time raises TimeoutError."""
        self.reads += 1
        async with asyncio.timeout(C.ENDPOINT_SOURCE_TIMEOUT_S):
            return list(dict.fromkeys(u.rstrip("/") for u in await self._source.urls()))

    async def _refresh(self) -> None:
        """Members no longer listed leave; URLs newly listed are admitted before they join."""
        try:
            urls = await self._read()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a registry that cannot be read now is read again later; the pool stays as is
            said = f"{type(exc).__name__}: {exc}"
            if said != self._unread:  # said once while it lasts
                log.warning("%s: cannot read the endpoint list (%s); the last one stands, read again every %.3gs",
                            self.role, said, self._refresh_interval)  # fmt: skip
            self._unread = said
            return
        if self._unread:
            log.info("%s: the endpoint list is read again", self.role)
            self._unread = ""
        listed = set(urls)
        for ep in [ep for ep in self._pool.endpoints if ep.url not in listed]:
            log.info("%s endpoint %s is no longer listed: it leaves the pool once its requests in flight end",
                     self.role, ep)  # fmt: skip
            self._pool.leave(ep.url)
        for url in [u for u in self._why if u not in listed]:
            if (task := self._trying.pop(url, None)) is not None:
                task.cancel()
            del self._why[url]  # listed again later, it is checked again
        known = {ep.url for ep in self._pool.endpoints} | self._trying.keys() | self._why.keys()
        for url in urls:
            if url in known:
                continue
            try:
                ep = self._make(url)
            except ConfigError as exc:  # not a URL the client can use: said once, while it is listed
                self._note(url, exc)
                continue
            log.info("%s endpoint %s is listed: it joins once it passes the identity check", self.role, masked_url(url))
            self._try(ep, None, at_once=True)
        self._listed = urls
        self._pool.reassess()

    def close(self) -> None:
        for task in [self._refresher, *self._trying.values()]:
            if task is not None:
                task.cancel()
