"""One HTTP call to an endpoint, its failures mapped onto the error tree (retryable or not)."""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from typing import Any

import httpx
import orjson

from ..errors import EndpointError, RetryableError, SampleError, ShapeError
from .base import Endpoint
from .retry import retry_after_seconds, should_retry

log = logging.getLogger(__name__)
JSON_HEADERS = {"content-type": "application/json"}


def _server_message(response: httpx.Response) -> str:
    """The error text a server put in its body (vLLM, TGI and OpenAI shapes), shortened, on one line (another web
    server's HTML error page is many)."""
    try:
        body = response.json()
    except ValueError:
        return " ".join(response.text.split())[:200]
    if isinstance(body, dict):
        err = body.get("error", body.get("message", body.get("detail", body)))
        if isinstance(err, dict):
            err = err.get("message", err)
        body = err
    return " ".join(str(body).split())[:300]


def decode_json(content: bytes) -> Any:
    """orjson: several times faster than the stdlib on large prompt-log-prob answers (DPO). The stdlib reads what
    strict JSON does not (the NaN a server may write), so a non-finite score is still seen and reported."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return json.loads(content)


@lru_cache(maxsize=4096)
def _url(base: str, path: str) -> httpx.URL:
    """The parsed URL of `path` on an endpoint: httpx parses a string URL on every request (~40 µs here)."""
    return httpx.URL(base.rstrip("/") + path)


async def request_body(ep: Endpoint, method: str, path: str, payload: Any | None = None) -> bytes:
    """The raw answer of `method path` on `ep` (for callers that decode it themselves); RetryableError or
    SampleError when the server failed."""
    url = _url(ep.url, path)
    # orjson: the stdlib encoder is several times slower on a request of six long texts
    content = orjson.dumps(payload) if payload is not None else None
    headers = ep.headers | JSON_HEADERS if content is not None else ep.headers
    try:
        answer = await ep.transport.send(method, url, headers, content)
    except (httpx.TimeoutException, httpx.TransportError) as exc:
        raise RetryableError(f"{url}: {type(exc).__name__}: {str(exc) or 'connection closed'}") from None
    if answer.status < 300:
        return answer.content
    response = httpx.Response(answer.status, headers=answer.headers, content=answer.content)
    if answer.status < 400:  # never followed: a POST must not silently become another request
        location = response.headers.get("location", "no Location header")
        raise EndpointError(f"{url}: HTTP {answer.status} redirect to {location}: give the endpoint's final URL")
    message = f"{url}: HTTP {answer.status}: {_server_message(response)}"
    if should_retry(response):
        overloaded = answer.status == 429  # load, not ill health: never ejects the endpoint
        raise RetryableError(message, retry_after_seconds(response.headers), overloaded=overloaded)
    if answer.status in (401, 403, 404):
        raise EndpointError(message)  # wrong key, wrong path or model: no sample would fare better
    raise SampleError(message)


def answer_json(content: bytes, where: str | httpx.URL) -> Any:
    """A decoded answer. A success answer that is not JSON (an HTML page, a malformed body: a cut-off one never
    gets here, its framing fails first) fails its prompt at once: retried, it stalled the prompt through every
    backoff and took a server whose /health answers out as down; a rerun asks again."""
    try:
        return decode_json(content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = content[:120].decode("utf-8", errors="replace")
        raise ShapeError(f"{where}: answer is not JSON: {text!r}") from None


async def request_json(ep: Endpoint, method: str, path: str, payload: Any | None = None) -> Any:
    """The decoded JSON answer of `method path` on `ep`; RetryableError or SampleError otherwise."""
    content = await request_body(ep, method, path, payload)
    return answer_json(content, _url(ep.url, path))  # the URL is formatted only for an error
