"""A role's connections: one aiohttp session (its keep-alive pool, proxies, TLS), shared by every HTTP path.

aiohttp's pool hands out an idle connection of a host in O(1), where httpx's own pool (httpcore) scans every
connection of the client on each request: ~2.5 ms of CPU per request at 16 connections (docs/performance.md has
the bench figures). Requests of the backends go to the session directly (`send`); httpx clients — the judge's
openai client, the health probes — run on the same session through httpx-aiohttp's transport, so every request
of a role shares one pool and one set of proxy and TLS settings. aiohttp reads interim 1xx answers past, refuses
malformed framing (conflicting Content-Length), and with `trust_env` honours HTTP(S)_PROXY and NO_PROXY. Once the
role's identity is settled, every connection is checked before it carries a request (connection_check.py).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from typing import Any, NamedTuple

import aiohttp
import certifi
import httpx
from aiohttp.helpers import get_env_proxy_for_url
from httpx_aiohttp import AiohttpTransport
from yarl import URL

from .connection_check import CheckedConnector, ConnectionCheck


class Answer(NamedTuple):
    """An HTTP answer as read: status, headers, body."""

    status: int
    headers: list[tuple[bytes, bytes]]
    content: bytes


Proxy = tuple[str | None, aiohttp.BasicAuth | None]


def env_proxy(url: URL) -> Proxy:
    """The proxy the environment names for `url` (HTTP_PROXY / HTTPS_PROXY, unless NO_PROXY exempts its host)."""
    try:
        proxy, auth = get_env_proxy_for_url(url)
    except LookupError:
        return None, None
    return str(proxy), auth


@functools.cache
def ssl_context(verify: bool) -> ssl.SSLContext:
    """certifi's CA bundle (the same on every machine), or no verification where a role turns it off. Built once
    per process and never changed after: loading the bundle is ~30 ms of CPU, paid by every run (a checkpoint's
    evaluation in a training loop) and every Ray dashboard client otherwise."""
    context = ssl.create_default_context(cafile=certifi.where())
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class Session:
    """One role's aiohttp session, made on first use (it must be made inside the running event loop)."""

    def __init__(
        self,
        verify: bool,
        connect_timeout: float,
        read_timeout: float,
        connections: int,
        request_timeout: float | None = None,
    ) -> None:
        self._ssl = ssl_context(verify)
        # sock_read restarts with every byte: only `total` (the whole request, answer read) stops a server that
        # trickles its answer
        self._timeout = aiohttp.ClientTimeout(
            total=request_timeout, sock_connect=connect_timeout, sock_read=read_timeout
        )
        self._overdue = f"no complete answer within {request_timeout}s (client.request_timeout)"
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None
        self._check: ConnectionCheck | None = None
        self._proxies: dict[tuple[str, str | None, int | None], Proxy] = {}  # per server: read from the environment

    def proxy_for(self, url: URL) -> Proxy:
        key = (url.scheme, url.host, url.port)
        if key not in self._proxies:
            self._proxies[key] = env_proxy(url)
        return self._proxies[key]

    def ssl_context(self) -> ssl.SSLContext:
        return self._ssl

    def check_connections(self, check: ConnectionCheck | None) -> None:
        """From now on every connection passes `check` before it carries a request (None: no more checks)."""
        self._check = check
        if self._session is not None:
            connector = self._session.connector
            assert isinstance(connector, CheckedConnector)
            connector.check = check

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = CheckedConnector(ssl=self._ssl, limit=self._connections, limit_per_host=0)
            connector.check = self._check
            # proxies are named per request (proxy_for): trust_env would read the environment on every request
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout, trust_env=False)
        return self._session

    async def send(self, method: str, url: httpx.URL | str, headers: dict[str, str], body: bytes | None) -> Answer:
        """One request; errors are httpx's (ConnectError, ReadTimeout, RemoteProtocolError), which the retry
        logic already classifies."""
        target = URL(str(url), encoded=True)
        proxy, auth = self.proxy_for(target)
        try:
            async with self.session.request(
                method, target, data=body, headers=headers, allow_redirects=False, proxy=proxy, proxy_auth=auth
            ) as response:
                content = await response.read()
                return Answer(response.status, list(response.raw_headers), content)
        except TimeoutError as exc:  # aiohttp names the connect and read timeouts; the total comes bare
            raise httpx.ReadTimeout(str(exc) or self._overdue) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        except aiohttp.ClientResponseError as exc:  # a malformed answer (framing, headers)
            raise httpx.RemoteProtocolError(str(exc)) from exc
        except aiohttp.ClientError as exc:  # a dropped connection, a proxy that failed, ...
            raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}") from exc

    def httpx_transport(self, url: str | None = None) -> httpx.AsyncBaseTransport:
        """httpx over this session, for clients that need httpx's API (openai); with the proxy the environment
        names for `url`'s server."""
        proxy, auth = self.proxy_for(URL(url)) if url is not None else (None, None)
        via = httpx.Proxy(proxy, auth=(auth.login, auth.password) if auth else None) if proxy else None
        # the role's own TLS context (requests go through the session's connector, which holds it): without it each
        # transport builds a context of its own and loads certifi's bundle, unused (~17 ms of CPU: a second at 64
        # endpoints)
        return AiohttpTransport(verify=self._ssl, client=lambda: self.session, proxy=via)

    def httpx_mounts(self, urls: list[str]) -> dict[str, httpx.AsyncBaseTransport]:
        """One transport per server of `urls` (each with its own proxy), for an httpx client's `mounts`."""
        origins = {str(URL(u).origin()): u for u in urls}
        return {origin: self.httpx_transport(u) for origin, u in origins.items()}

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class DeadlineClient(httpx.AsyncClient):
    """httpx's client with a deadline on each whole request, its answer read (`send` reads it unless asked to
    stream): httpx has connect and read timeouts only, and httpx-aiohttp's transport passes only those on."""

    def __init__(self, *args: Any, deadline: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        try:
            async with asyncio.timeout(self.deadline):
                return await super().send(request, **kwargs)
        except TimeoutError:
            overdue = f"no complete answer within {self.deadline}s (client.request_timeout)"
            raise httpx.ReadTimeout(overdue, request=request) from None
