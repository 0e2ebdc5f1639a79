"""The callers of an endpoint pool (endpoint_pool.py) that wait: for a free endpoint at work, or out a retry's
backoff.

Each waits on a plain future that the pool resolves (no asyncio.Condition, no wait_for): a cancelled caller holds
no lock and leaves nothing behind, so Ctrl-C and an outage both end promptly.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Waiting:
    """The callers waiting for a slot (woken oldest first) and those in a retry's backoff."""

    def __init__(self) -> None:
        self.waiters: deque[asyncio.Future[None]] = deque()  # callers waiting for a free, healthy endpoint
        self.sleepers: set[asyncio.Future[None]] = set()  # callers in retry backoff

    async def wait(self, first: bool = False) -> None:
        """Until woken (`wake`); the caller then looks for a slot again (`first`: before every other waiter, as a
        request moved off a silent endpoint is older than theirs). Cancelled after it was woken, it passes its turn
        to the next caller."""
        waiter = asyncio.get_running_loop().create_future()
        if first:
            self.waiters.appendleft(waiter)
        else:
            self.waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.cancelled():  # cancelled while queued: leave the queue
                with contextlib.suppress(ValueError):
                    self.waiters.remove(waiter)
            else:  # woken, then cancelled before taking the slot: it goes to the next caller
                self.wake(1)
            raise

    def wake(self, n: int | None = None) -> None:
        """Resolve the oldest `n` waiters (all when None); each then looks for a slot again."""
        while self.waiters and (n is None or n > 0):
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                n = None if n is None else n - 1

    async def sleep(self, delay: float) -> None:
        """A backoff of `delay` seconds that `wake_all` cuts short."""
        fut = asyncio.get_running_loop().create_future()
        handle = asyncio.get_running_loop().call_later(delay, _resolve, fut)
        self.sleepers.add(fut)
        try:
            await fut
        finally:
            handle.cancel()
            self.sleepers.discard(fut)

    def wake_all(self) -> None:
        """Every waiter and every sleeper resolved (an outage outlasted its patience: each caller then fails)."""
        self.wake()
        for fut in list(self.sleepers):
            if not fut.done():
                fut.set_result(None)
