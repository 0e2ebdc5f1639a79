"""An httpx MockTransport that remembers its requests and responses, for unit tests of retry and parsing logic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from rmbench_client.backends.base import Endpoint
from rmbench_client.backends.session import Answer


class Recorder(httpx.AsyncBaseTransport):
    """MockTransport that remembers every request and every response it handed out."""

    def __init__(self, handler: Callable[[httpx.Request], Any]) -> None:
        self._mock = httpx.MockTransport(handler)
        self.requests: list[httpx.Request] = []
        self.responses: list[httpx.Response] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        response = await self._mock.handle_async_request(request)
        self.responses.append(response)
        return response

    def all_closed(self) -> bool:
        return all(r.is_closed for r in self.responses)


def completion(text: str) -> dict:
    """A chat completion as vLLM's OpenAI-compatible server answers it."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "judge",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def chat_answer(
    *contents: str | None,
    reasoning: str | None = None,
    field: str = "reasoning",
    finish: str = "stop",
    usage: dict | None = None,
) -> dict:
    """A chat completion in vLLM's shape with one choice per content: `reasoning` (vLLM's split thinking) under
    `field` (`reasoning_content` on older vLLM releases), `finish` its finish_reason."""
    message = lambda text: {"role": "assistant", "content": text} | ({field: reasoning} if reasoning else {})  # noqa: E731
    choices = [{"index": i, "message": message(c), "finish_reason": finish} for i, c in enumerate(contents)]
    return completion("") | {"choices": choices} | ({"usage": usage} if usage else {})


JudgeAnswer = tuple[int, bytes | dict, str]  # status, body (a dict is sent as JSON), content type


class FakeJudge:
    """A loopback OpenAI-compatible judge answering as vLLM does: /v1/models, /version, /health, and
    /v1/chat/completions from `answer(request body) -> JudgeAnswer` (swappable between runs). Remembers every chat
    request's body. For fault and answer-shape tests only: scores of real models come from real vLLM servers."""

    def __init__(self, answer: Callable[[dict], JudgeAnswer], version: str = "0.32.0", served: str = "judge") -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.answer, self.version, self.requests = answer, version, []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, body: bytes | dict, kind: str = "application/json") -> None:
                data = json.dumps(body).encode() if isinstance(body, dict) else body
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if self.path == "/v1/models":
                    card = {"id": served, "object": "model", "root": f"/models/{served}", "max_model_len": 4096}
                    self._send(200, {"object": "list", "data": [card]})
                elif self.path == "/version":
                    self._send(200, {"version": fake.version})
                else:
                    self._send(200 if self.path == "/health" else 404, b"")

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.requests.append(body)
                self._send(*fake.answer(body))

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeJudge:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class HttpxSender:
    """An endpoint's transport (`backends.base.Transport`) over an httpx client: a MockTransport's answers reach
    the code under test as the role's aiohttp session hands them over (status, headers, body)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def send(self, method: str, url: httpx.URL | str, headers: dict[str, str], body: bytes | None) -> Answer:
        response = await self.client.request(method, url, content=body, headers=headers)
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        return Answer(response.status_code, list(response.headers.raw), content)


def endpoint(url: str, model: str, client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> Endpoint:
    """An endpoint whose requests go to `client` (its MockTransport)."""
    return Endpoint(url, model, client, headers or {}, transport=HttpxSender(client))
