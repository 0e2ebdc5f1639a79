"""A loopback forward HTTP proxy (what HTTP_PROXY names) that sends interim 1xx answers before every real one.

Requests arrive in absolute form (`POST http://host:port/path HTTP/1.1`); each is forwarded on a kept-alive
upstream connection and its answer relayed after a `100 Continue` and a `103 Early Hints`, as some proxies and
servers send them. It counts what it forwarded. Bounded: it serves on 127.0.0.1 while the test holds it.
"""

from __future__ import annotations

import asyncio
import threading
from urllib.parse import urlsplit

INTERIM = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </hint.css>; rel=preload\r\n\r\n"


def _length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return None


async def read_message(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 message (head and body: Content-Length or chunked), as raw bytes."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = _length(head)
    if length is not None:
        return head + await reader.readexactly(length)
    if b"chunked" in head.lower():
        body = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            body += size_line + await reader.readexactly(size + 2)
            if size == 0:
                return head + body
    return head


class ForwardProxy:
    """`with ForwardProxy() as url:` a proxy at `url` (http://127.0.0.1:PORT) in its own thread."""

    def __init__(self, interim: bool = True) -> None:
        self.interim = interim
        self.forwarded = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                request = await read_message(reader)
                line, rest = request.split(b"\r\n", 1)
                method, target, version = line.split(b" ")
                url = urlsplit(target.decode())
                if upstream is None:
                    upstream = await asyncio.open_connection(url.hostname, url.port)
                path = url.path + (f"?{url.query}" if url.query else "")
                kept = b"\r\n".join(h for h in rest.split(b"\r\n") if not h.lower().startswith(b"proxy-"))
                upstream[1].write(b" ".join([method, path.encode(), version]) + b"\r\n" + kept)
                await upstream[1].drain()
                answer = await read_message(upstream[0])
                self.forwarded += 1
                writer.write((INTERIM if self.interim else b"") + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            if upstream is not None:
                upstream[1].close()

    def __enter__(self) -> str:
        self._thread.start()
        start = asyncio.start_server(self._handle, "127.0.0.1", 0)
        self._server = asyncio.run_coroutine_threadsafe(start, self._loop).result(10)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
