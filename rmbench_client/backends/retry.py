"""Retry policy: which failures are worth another try, and how long to wait first.

Retried: timeouts, dropped or refused connections, 408, 409, 429 and 5xx. Never a 400-class error otherwise:
the same request would fail the same way. Delays grow exponentially, are capped and jittered; a server's
`Retry-After` (seconds or an HTTP date) is honoured up to `RETRY_AFTER_MAX_S`, with jitter on top so that many
waiting requests do not all come back at the same instant.
"""

from __future__ import annotations

import email.utils
import random
import time

import httpx

from .. import constants as C
from ..errors import RetryableError

# the jitter's own generator: the caller's `random` stream (a seeded training script's) is not drawn from
JITTER = random.Random()


def should_retry(outcome: httpx.Response | BaseException) -> bool:
    """True for a response or exception that another attempt may not repeat."""
    if isinstance(outcome, httpx.Response):
        return outcome.status_code in C.RETRY_STATUSES or outcome.status_code >= 500
    return isinstance(outcome, httpx.TimeoutException | httpx.TransportError | RetryableError)


def retry_after_seconds(headers: httpx.Headers | dict[str, str] | None) -> float | None:
    """The server's `Retry-After` (or `retry-after-ms`) in seconds, when present and sane."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):  # neither seconds nor an HTTP date: ignore the header
        return None
    return max(0.0, parsed.timestamp() - time.time())


def retry_delay(
    attempt: int,
    retry_after: float | None = None,
    initial: float = C.RETRY_INITIAL_DELAY_S,
    cap: float = C.RETRY_MAX_DELAY_S,
    jitter: float = C.RETRY_JITTER,
) -> float:
    """Seconds to wait before attempt `attempt + 1` (attempt counts from 0)."""
    if retry_after is not None:
        return min(retry_after, C.RETRY_AFTER_MAX_S) * (1.0 + jitter * JITTER.random())
    delay = min(cap, initial * 2.0**attempt)
    return delay * (1.0 - jitter * JITTER.random())
