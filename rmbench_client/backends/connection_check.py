"""Every connection of a role checked before it carries a request: a server restarted or swapped behind the same
address (a rolling update, two servers bound to one port with SO_REUSEPORT, a load balancer that moved) is reached
only through a new connection, and aiohttp's pool opens new ones silently (a dropped keep-alive connection is
replaced within the same request).

`CheckedConnector.connect` is where aiohttp takes a connection for every request, new or reused. A connection it has
not seen pass the role's `ConnectionCheck` is held back while the check runs, and the check's own requests go over
that very connection (lent to them one at a time, then handed back, never to the pool): what it finds is the server
that connection reaches, whichever server the role's other connections reach. A connection whose check raises is
closed and its request fails with the check's error. Once checked, a connection is taken as it is (a set lookup).
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
from aiohttp.connector import Connection

if TYPE_CHECKING:
    from aiohttp.client_proto import ResponseHandler
    from aiohttp.client_reqrep import ClientRequest, ConnectionKey
    from aiohttp.tracing import Trace


class ConnectionCheck(Protocol):
    """What a role asks before a connection carries a request (the endpoint pool's `check_connection`)."""

    async def __call__(self, url: str) -> bool:
        """Check the server `url` (the request's URL) is on; False when nothing is checked there (the URL is no
        endpoint at work: its connection is checked when it next carries a request); raises when the server is not
        the role's (EndpointChanged) or could not be checked."""
        ...


class _Lender:
    """A connection under check, lent to the check's requests one at a time."""

    def __init__(self, connector: CheckedConnector, key: ConnectionKey, protocol: ResponseHandler) -> None:
        self.connector, self.key, self.protocol = connector, key, protocol
        self._turn = asyncio.Lock()  # HTTP/1.1: one request at a time on a connection
        self.broken = False

    async def lend(self) -> Connection | None:
        """The connection for the check's next request; None once it closed (its request takes a new one)."""
        await self._turn.acquire()
        if self.broken or not self.protocol.is_connected():
            self.broken = True
            self._turn.release()
            return None
        return _Lent(self)

    def back(self, close: bool) -> None:
        if close or self.protocol.should_close:
            self.broken = True
            self.protocol.close()
        self._turn.release()


class _Lent(Connection):
    """The connection under check as one request of the check holds it: released or closed, it goes back to the
    check (aiohttp would put it in the pool, or close it there)."""

    def __init__(self, lender: _Lender) -> None:
        super().__init__(lender.connector, lender.key, lender.protocol, asyncio.get_running_loop())
        self._lender = lender

    def _back(self, close: bool) -> None:
        self._notify_release()
        if self._protocol is not None:
            self._protocol = None
            self._lender.back(close)

    def release(self) -> None:
        self._back(close=False)

    def close(self) -> None:
        self._back(close=True)


# the connection the running check lends to its requests (set in the task that runs the check: its requests, and
# tasks they start, see it)
_LENT: ContextVar[_Lender | None] = ContextVar("rmbench_lent_connection", default=None)


class CheckedConnector(aiohttp.TCPConnector):
    """aiohttp's connector whose every connection passes `check` (once set) before it carries a request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.check: ConnectionCheck | None = None
        self._checked: set[ResponseHandler] = set()
        self._limit_checked = 2 * max(self.limit, 64)  # past this, the closed ones are forgotten

    async def connect(self, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout) -> Connection:
        lender = _LENT.get()
        if lender is not None:  # a request of a running check: never checked itself
            if lender.connector is self and lender.key == req.connection_key and (lent := await lender.lend()):
                return lent
            return await super().connect(req, traces, timeout)
        conn = await super().connect(req, traces, timeout)
        if self.check is None or conn.protocol in self._checked:
            return conn
        return await self._checked_now(conn, req, traces, timeout)

    async def _checked_now(
        self, conn: Connection, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> Connection:
        protocol = conn.protocol
        assert protocol is not None  # a connection just taken
        lender = _Lender(self, req.connection_key, protocol)
        token = _LENT.set(lender)
        try:
            assert self.check is not None
            checked = await self.check(str(req.url))
        except BaseException:
            conn.close()
            raise
        finally:
            _LENT.reset(token)
        if lender.broken or not protocol.is_connected():
            # A server that closes every connection after one answer (HTTP/1.0, `Connection: close` behind some
            # proxies) cannot be checked over the connection its request takes: the check went over new ones, and
            # the request takes one more, as checked as such a server's connections can be.
            conn.close()
            conn = await super().connect(req, traces, timeout)
            protocol = conn.protocol
            assert protocol is not None
        if checked:
            if len(self._checked) >= self._limit_checked:
                self._checked = {p for p in self._checked if p.is_connected()}
            self._checked.add(protocol)
        return conn
