"""A loopback HTTP proxy for fault tests: counts requests per path and injects failures.

It forwards each request to a real upstream server, so the scores that come back are real; `faults` makes a share
of requests fail with 503, a reset connection, or a hang past the client's timeout, and `rewrite` can alter an
answer (e.g. a NaN reward). Bounded: it serves only while the test holds it, on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from fake_reward_faults import PROBE_MARKS


def _units(body: bytes) -> int:
    """How many sequences a request asks for: the length of a list `input`, else one."""
    try:
        inputs = json.loads(body).get("input") if body else None
    except (ValueError, AttributeError):
        return 1
    return len(inputs) if isinstance(inputs, list) else 1


@dataclass
class Faults:
    error_503: float = 0.0
    reset: float = 0.0
    hang: float = 0.0
    hang_seconds: float = 5.0
    first_429: int = 0  # the first N requests (other than probes) are answered 429 with Retry-After
    retry_after: str = "0.2"
    no_health: bool = False  # /health answers 404, as on a hosted OpenAI-compatible API


@dataclass
class FaultProxy:
    upstream: str
    faults: Faults = field(default_factory=Faults)
    rewrite: Callable[[str, bytes, bytes], bytes] | None = None  # (path, request body, answer) -> answer
    seed: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    units: Counter[str] = field(default_factory=Counter)  # sequences asked for per path (a list `input` counts each)
    requests: list[tuple[str, bytes]] = field(default_factory=list)  # (path, body) of every request, in order
    probe_units: Counter[str] = field(default_factory=Counter)  # of them, fingerprint probes (each new connection's)
    injected: Counter[str] = field(default_factory=Counter)
    auth_headers: list[str] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._handlers: set[asyncio.Task[None]] = set()  # each open connection's handler
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self._client = httpx.AsyncClient(timeout=60)
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
        # connections still open (a hang, a client that kept its connection) end here, while the loop runs: left
        # pending, their tasks are destroyed with the closed loop and warn later, in whichever test collects them
        for task in self._handlers:
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._client.aclose()

    def _429_left(self) -> bool:
        return self.injected["429"] < self.faults.first_429

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
                lower = {k.lower(): v for k, v in headers.items()}
                body = await reader.readexactly(int(lower.get("content-length", "0")))
                self.counts[path] += 1
                self.requests.append((path, body))
                self.units[path] += _units(body)
                if any(mark.encode() in body for mark in PROBE_MARKS):  # an identity check's fingerprint
                    self.probe_units[path] += _units(body)
                if "authorization" in lower:
                    self.auth_headers.append(lower["authorization"])
                if not await self._forward(method, path, lower, body, writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:  # the proxy stops with a request still waiting on a stopped upstream
            return  # (asyncio's stream callback would log a cancelled handler's "exception" as an error)
        finally:
            self._handlers.discard(task)
            if not writer.is_closing():
                writer.close()

    async def _forward(self, method: str, path: str, headers: dict, body: bytes, writer: asyncio.StreamWriter) -> bool:
        roll = self._rng.random()
        f = self.faults
        if (path == "/health" and f.no_health) or (path not in ("/health", "/v1/models") and self._429_left()):
            status = 404 if path == "/health" else 429
            self.injected[str(status)] += 1
            extra = "" if status == 404 else f"retry-after: {f.retry_after}\r\n"
            content = b'{"error": {"message": "injected", "type": "rate_limit"}}'
            head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}"
            writer.write(f"{head}content-length: {len(content)}\r\n\r\n".encode() + content)
            await writer.drain()
            return True
        if path != "/health" and roll < f.reset:
            self.injected["reset"] += 1
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
            writer.transport.abort()
            return False
        if path != "/health" and roll < f.reset + f.hang:
            self.injected["hang"] += 1
            await asyncio.sleep(f.hang_seconds)
            writer.transport.abort()
            return False
        if path != "/health" and roll < f.reset + f.hang + f.error_503:
            self.injected["503"] += 1
            payload = b'{"error": "injected overload"}'
            status, content = 503, payload
        else:
            keep = {k: v for k, v in headers.items() if k in ("content-type", "authorization")}
            response = await self._client.request(method, self.upstream + path, content=body, headers=keep)
            status, content = response.status_code, response.content
            if self.rewrite is not None:
                content = self.rewrite(path, body, content)
        writer.write(
            f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(content)}\r\n\r\n".encode()
            + content
        )
        await writer.drain()
        return True
