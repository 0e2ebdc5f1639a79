"""An httpx MockTransport that remembers its requests and responses, for unit tests of retry and parsing logic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx


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
