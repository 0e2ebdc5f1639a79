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
