"""A lean HTTP/1.1 transport for httpx on asyncio streams: keep-alive connections per host in a LIFO stack.

Why: httpcore's pool scans every connection of the client on each request (and asks anyio for socket details of
each idle one), so its cost per request grows with the endpoints of a role: about 2.5 ms of CPU per request at
16 connections, more than the rest of the client together. Here a request pops an idle connection of its host
(O(1)), writes the request, and reads a Content-Length or chunked answer. Errors are httpx's (ConnectError,
ReadTimeout, RemoteProtocolError, ...), so retries and the endpoint pool see what they saw before.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from typing import NamedTuple

import httpx

_CRLF = b"\r\n"
_MAX_HEAD = 64 * 1024


_FIXED = (b"Accept: */*", b"Accept-Encoding: identity", b"Connection: keep-alive", b"User-Agent: rmbench-client")


class Answer(NamedTuple):
    """An HTTP answer as read: status, reason phrase, raw headers, body."""

    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]
    content: bytes


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


class Http11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive; TLS verified (or not) as the role says. One per httpx.AsyncClient."""

    def __init__(self, verify: bool = True, connect_timeout: float = 10.0, read_timeout: float = 120.0) -> None:
        self._verify = verify
        self._ssl: ssl.SSLContext | None = None
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._idle: dict[tuple[str, str, int], deque[_Conn]] = {}

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context of https endpoints (verifying certificates unless the role says not to)."""
        if self._ssl is None:
            ctx = ssl.create_default_context()
            if not self._verify:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            self._ssl = ctx
        return self._ssl

    async def _connect(self, scheme: str, host: str, port: int, request: httpx.Request | None) -> _Conn:
        tls = self.ssl_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(self._connect_timeout):
                reader, writer = await asyncio.open_connection(host, port, ssl=tls, limit=_MAX_HEAD)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out", request=request) from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from None
        return _Conn(reader, writer)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = request.content  # built from json= or content=: never a stream here
        answer = await self._roundtrip(request.url, request.method, _request_head(request, body), body, request)
        # the reason phrase as sent: httpx would otherwise look it up for its log line on every request
        extensions = {"http_version": b"HTTP/1.1", "reason_phrase": answer.reason}
        return httpx.Response(answer.status, headers=answer.headers, content=answer.content, request=request,
                              extensions=extensions)  # fmt: skip

    async def send(self, method: str, url: httpx.URL, headers: dict[str, str], body: bytes | None) -> Answer:
        """One request without httpx's Request and Response objects (its header models, cookies and hooks cost
        about as much CPU per request as the rest of the client): the scoring path's requests
        (`transport.request_body`). Errors are the same httpx errors as through a client."""
        body = body or b""
        return await self._roundtrip(url, method, _plain_head(method, url, headers, body), body, None)

    async def _roundtrip(
        self, url: httpx.URL, method: str, head: bytes, body: bytes, request: httpx.Request | None
    ) -> Answer:
        scheme = url.scheme
        port = url.port or (443 if scheme == "https" else 80)
        key = (scheme, url.host, port)
        idle = self._idle.setdefault(key, deque())
        while idle:  # the most recently used connection first: it is the least likely to have timed out
            conn = idle.pop()
            if not conn.usable():
                conn.close()
                continue
            try:
                return await self._exchange(conn, method, head, body, request, idle)
            except _Stale:
                conn.close()  # the server closed a kept-alive connection: try the next or a new one
        conn = await self._connect(scheme, url.host, port, request)
        try:
            return await self._exchange(conn, method, head, body, request, idle)
        except _Stale:
            conn.close()
            raise httpx.RemoteProtocolError("server closed the connection without answering", request=request) from None

    async def _exchange(
        self, conn: _Conn, method: str, head: bytes, body: bytes, request: httpx.Request | None, idle: deque[_Conn]
    ) -> Answer:
        reader, writer = conn.reader, conn.writer
        answered = False
        try:
            writer.write(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                writer.write(body)
            async with asyncio.timeout(self._read_timeout):
                try:
                    raw = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError as exc:
                    if not exc.partial:
                        raise _Stale from None
                    raise
                answered = True
                status, reason, headers, keep_alive, length, chunked = _parse_head(raw, request)
                if chunked:
                    content = await _read_chunked(reader)
                elif length is not None:
                    content = await reader.readexactly(length) if length else b""
                elif method == "HEAD" or status in (204, 304) or 100 <= status < 200:
                    content = b""
                else:
                    content = await reader.read()
                    keep_alive = False
        except TimeoutError:
            conn.close()
            raise httpx.ReadTimeout("timed out waiting for the answer", request=request) from None
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            conn.close()
            if not answered and isinstance(exc, ConnectionError):
                raise _Stale from None
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from None
        except BaseException:  # cancelled mid-exchange: the connection's state is unknown
            conn.close()
            raise
        if keep_alive:
            idle.append(conn)
        else:
            conn.close()
        return Answer(status, reason, headers, content)

    async def aclose(self) -> None:
        for conns in self._idle.values():
            while conns:
                conns.pop().close()


class _Stale(Exception):
    """A reused connection that the server had closed: the request never reached it."""


def _request_head(request: httpx.Request, body: bytes) -> bytes:
    fields, has_length = [], False
    for name, value in request.headers.raw:
        low = name.lower()
        if low == b"content-length":
            has_length = True
        elif low == b"transfer-encoding":
            continue  # the body is sent whole, with its length
        elif low == b"accept-encoding":
            value = b"identity"  # answers are read as sent: no decompression here
        fields.append(name + b": " + value)
    return _head(request.method, request.url.raw_path, fields, body, has_length)


def _plain_head(method: str, url: httpx.URL, headers: dict[str, str], body: bytes) -> bytes:
    """The head of `send`'s request: what httpx would send (no cookies, no compression asked for)."""
    fields = [b"Host: " + url.netloc, *_FIXED]
    fields += [f"{name}: {value}".encode("latin-1") for name, value in headers.items()]
    return _head(method, url.raw_path, fields, body, False)


def _head(method: str, target: bytes, fields: list[bytes], body: bytes, has_length: bool) -> bytes:
    """The request line, the header fields, and the body's length where the fields do not give it."""
    lines = [method.encode() + b" " + target + b" HTTP/1.1", *fields]
    if not has_length and (body or method in ("POST", "PUT", "PATCH")):
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return _CRLF.join(lines) + b"\r\n\r\n"


def _parse_head(
    raw: bytes, request: httpx.Request | None
) -> tuple[int, bytes, list[tuple[bytes, bytes]], bool, int | None, bool]:
    lines = raw[:-4].split(_CRLF)
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise httpx.RemoteProtocolError(f"not an HTTP/1.1 answer: {lines[0][:80]!r}", request=request)
    status = int(parts[1])
    keep_alive = parts[0] == b"HTTP/1.1"
    length: int | None = None
    chunked = False
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        value = value.strip()
        low = name.lower()
        if low == b"content-length":
            length = int(value)
        elif low == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif low == b"connection":
            keep_alive = value.lower() != b"close"
        headers.append((name, value))
    return status, parts[2] if len(parts) > 2 else b"", headers, keep_alive, length, chunked


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(_CRLF)).split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (await reader.readuntil(_CRLF)) != _CRLF:  # trailers
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
