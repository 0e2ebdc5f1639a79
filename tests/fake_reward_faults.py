"""A loopback stand-in for a vLLM reward server, for the fault paths that a real server cannot be made to take: a
`/v1/models` that hangs, a head wider than the config expects, an answer trickled a byte at a time, HTML under
HTTP 200. The routes and answer shapes are vLLM 0.32's (`/v1/models`, `/version`, `/openapi.json`, `/tokenize`,
`/pooling`, `/health`); a reward is a fixed function of the scored text, so two runs agree. Serves on 127.0.0.1
in a thread while the test holds it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

MODEL = "fake-reward"
PROBE_MARKS = ("Template check", "capital of France")  # in model_kinds/reward.py's FINGERPRINT_PROBES


def reward(text: str, width: int) -> list[float]:
    """The head's outputs for a scored text: fixed by the text, different for different texts."""
    base = (zlib.crc32(text.encode()) % 10_000) / 1000.0 - 5.0
    return [base + i for i in range(width)]


@dataclass
class FakeVllm:
    """`hang`: paths that never answer; `width`: the head's outputs; `fault`: how `/pooling` answers after its
    first `healthy_pooling` requests ("trickle": one byte every `trickle_s`; "html": an HTML page under 200), the
    fingerprint probes of identity checks too unless `fault_probes` is False; `nan_for`: texts holding it get a NaN
    reward (one bad text inside a request of several)."""

    hang: tuple[str, ...] = ()
    width: int = 1
    fault: str | None = None
    healthy_pooling: int = 0
    trickle_s: float = 0.5
    fault_probes: bool = True
    nan_for: str | None = None
    counts: Counter[str] = field(default_factory=Counter)
    probes: int = 0  # /pooling requests of a fingerprint (start-up checks, identity checks of new connections)
    sizes: list[int] = field(default_factory=list)  # the texts of each /pooling request that is no probe
    port: int = 0

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.requested = threading.Event()  # set once any hanging path was asked

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeVllm:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake vLLM did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        left = asyncio.all_tasks(self._loop)  # answers still trickling or hanging when the test ended
        for task in left:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.counts[path] += 1
        body = await request.json() if request.can_read_body else {}
        probe = path == "/pooling" and any(mark in json.dumps(body) for mark in PROBE_MARKS)
        self.probes += probe
        if path == "/pooling" and not probe:
            self.sizes.append(len(body["input"]) if "input" in body else 1)
        if path in self.hang:
            self.requested.set()
            await self._stop.wait()  # until the test ends
            raise web.HTTPServiceUnavailable
        faulty = self.fault and (self.fault_probes or not probe) and self.counts[path] > self.healthy_pooling
        if path == "/pooling" and faulty:
            return await self._faulty(request, body)
        return web.json_response(self.answer(path, body))

    def answer(self, path: str, body: dict[str, Any]) -> Any:
        if path == "/v1/models":
            return {"object": "list", "data": [{"id": MODEL, "root": "/fake/reward", "max_model_len": 4096}]}
        if path == "/version":
            return {"version": "0.32.0"}
        if path == "/openapi.json":
            return {"paths": {p: {} for p in ("/pooling", "/tokenize", "/v1/models", "/health")}}
        if path == "/health":
            return {}
        if path == "/tokenize":
            text = body.get("prompt") or json.dumps(body.get("messages"))
            return {"tokens": [1] + [2 + ord(c) % 250 for c in text[:64]], "max_model_len": 4096}
        if path == "/pooling":
            texts = body["input"] if "input" in body else [json.dumps(body["messages"])]
            return {
                "object": "list",
                "data": [{"index": i, "data": self._reward(t)} for i, t in enumerate(texts)],
            }
        raise web.HTTPNotFound

    def _reward(self, text: str) -> list[float]:
        return [float("nan")] * self.width if self.nan_for and self.nan_for in text else reward(text, self.width)

    async def _faulty(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        if self.fault == "html":
            return web.Response(text="<html><body>Service portal</body></html>", content_type="text/html")
        content = json.dumps(self.answer("/pooling", body)).encode()
        response = web.StreamResponse(headers={"content-type": "application/json"})
        response.content_length = len(content)
        await response.prepare(request)
        for i in range(len(content)):  # a trickle: every byte restarts the client's read timeout
            await response.write(content[i : i + 1])
            await asyncio.sleep(self.trickle_s)
        return response
