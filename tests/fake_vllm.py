"""Loopback servers that answer as vLLM 0.32 does (the shapes of tests/recorded/vllm-0.32.0.json) for a fake model,
for the tests of the endpoint pool's membership: an endpoint down at start, one that joins late, one that serves
another model, one replaced behind its URL. Never a stand-in for vLLM's numbers: a reward or a log-prob is a fixed
function of the input (`shift` moves every number, `invert` negates the rewards: the same name with another
checkpoint behind it); `version` is what `/version` answers (another vLLM release); `reuse_port` binds with
SO_REUSEPORT, so that a second server can take the same port as a rolling update does.

The fake tokenizer is one token per UTF-8 byte (byte + 3), its chat template `TEMPLATE`; `/inference/v1/generate`
is not served (vLLM without --enable-scale-out), so DPO goes through `/v1/completions`.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
ROUTES = {  # vLLM 0.32 lists only its runner's routes
    "reward": ["/health", "/v1/models", "/version", "/tokenize", "/pooling"],
    "policy": ["/health", "/v1/models", "/version", "/tokenize", "/v1/completions", "/v1/chat/completions"],
}
SCORING = ("/pooling", "/v1/completions", "/v1/chat/completions")
PROBE_MARKS = ("Template check", "capital of France")  # in model_kinds/reward.py's FINGERPRINT_PROBES


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def render(messages: list[dict[str, str]], generation_prompt: bool) -> str:
    out = "".join(f"<{m['role']}>{m['content']}</s>" for m in messages)
    return out + ("<assistant>" if generation_prompt else "")


def tokens(text: str) -> list[int]:
    return [b + 3 for b in text.encode("utf-8")]


class _ReusePortServer(ThreadingHTTPServer):
    allow_reuse_port = True  # another server may bind the same port (SO_REUSEPORT): the kernel spreads connections


class FakeVllm:
    """One fake vLLM server serving `model` (`kind` reward or policy; a policy also answers chat, as a judge)."""

    def __init__(
        self,
        kind: str,
        model: str,
        *,
        root: str | None = None,
        shift: float = 0.0,
        delay: float = 0.0,
        port: int = 0,
        invert: bool = False,
        version: str = "0.32.0",
        reuse_port: bool = False,
        max_model_len: int = 4096,
        echo_key: str | None = None,
    ) -> None:
        self.kind, self.model, self.root, self.shift, self.delay = kind, model, root or f"/models/{model}", shift, delay
        self.invert, self.version, self.reuse_port = invert, version, reuse_port
        self.max_model_len = max_model_len
        self.echo_key = echo_key  # "start" (/v1/models) or "scoring" (/pooling, probes apart): an error echoing the key
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.paths: list[str] = []  # every request's path, in order
        self.scored: Counter[str] = Counter()  # scoring requests by path
        self.units = 0  # sequences (or conversations) scored by /pooling
        self.probed = 0  # of them, the reward model's fingerprint probes (an identity check's)
        self._server: ThreadingHTTPServer | None = None
        self._dead = False

    def start(self) -> FakeVllm:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()  # headers and body go out in two writes: without this, each answer waits ~40 ms
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(None)

            def do_POST(self) -> None:  # noqa: N802
                self._answer(json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}"))

            def _answer(self, body: Any) -> None:
                if fake._dead:  # stopped: its connections drop, as a killed server's do
                    self.close_connection = True
                    return
                fake.paths.append(self.path)
                status, answer = fake.answer(self.path, body)
                if fake.echoes(self.path, body):  # as a server or proxy that repeats the request's headers
                    said = f"bad request from {self.headers.get('authorization')}"
                    status, answer = (401 if fake.echo_key == "start" else 400), {"error": {"message": said}}
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        server_class = _ReusePortServer if self.reuse_port else ThreadingHTTPServer
        self._server = server_class(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._dead = True
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeVllm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def echoes(self, path: str, req: Any) -> bool:
        if self.echo_key == "start":
            return path == "/v1/models"
        return self.echo_key == "scoring" and path == "/pooling" and not any(p in str(req) for p in PROBE_MARKS)

    def answer(self, path: str, req: Any) -> tuple[int, Any]:
        if path not in ROUTES[self.kind] + ["/openapi.json"]:
            return 404, {"error": {"message": f"no route {path}", "code": 404}}
        if path == "/openapi.json":
            return 200, {"openapi": "3.1.0", "paths": {p: {} for p in ROUTES[self.kind]}}
        if path == "/health":
            return 200, {}
        if path == "/version":
            return 200, {"version": self.version}
        if path == "/v1/models":
            card = {"id": self.model, "object": "model", "root": self.root, "max_model_len": self.max_model_len}
            return 200, {"object": "list", "data": [card]}
        if path == "/tokenize":
            ids = tokens(render(req["messages"], req["add_generation_prompt"]) if "messages" in req else req["prompt"])
            return 200, {"count": len(ids), "max_model_len": self.max_model_len, "tokens": ids}
        if self.delay:
            time.sleep(self.delay)
        self.scored[path] += 1
        if path == "/pooling":
            inputs = [render(req["messages"], False)] if "messages" in req else req["input"]
            self.units += len(inputs)
            self.probed += sum(any(p in str(x) for p in PROBE_MARKS) for x in inputs)
            data = [{"index": i, "object": "pooling", "data": [self._reward(x)]} for i, x in enumerate(inputs)]
            return 200, {"object": "list", "model": self.model, "data": data}
        if path == "/v1/completions":
            seqs = [p if isinstance(p, list) else tokens(p) for p in req["prompt"]]
            choices = [{"index": i, "text": "", "prompt_token_ids": s, "prompt_logprobs": self._logprobs(s)}
                       for i, s in enumerate(seqs)]  # fmt: skip
            return 200, {"object": "text_completion", "model": self.model, "choices": choices}
        digest = hashlib.sha256(json.dumps(req["messages"]).encode()).digest()
        verdict = "[[A]]" if digest[0] % 3 else "[[B]]"
        message = {"role": "assistant", "content": f"Both are fine.\n{verdict}"}
        return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": self.model,
                     "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip

    def _reward(self, x: str | list[int]) -> float:
        ids = tokens(x) if isinstance(x, str) else x
        value = (sum(i * (k + 1) for k, i in enumerate(ids)) % 997) / 100.0 + self.shift
        return -value if self.invert else value

    def _logprobs(self, seq: list[int]) -> list[Any]:
        return [None] + [
            {str(t): {"logprob": -((t * 31 + j) % 97) / 10.0 - 0.01 + self.shift, "rank": 1, "decoded_token": "x"}}
            for j, t in enumerate(seq[1:], 1)
        ]
