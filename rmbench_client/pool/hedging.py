"""A request raced over several endpoints: the request as first sent, and the hedges the endpoint pool adds when its
endpoint falls silent (outliers.py). The first success wins; the other attempts are cancelled, their answers never
used and their failures never counted (endpoint_pool.py releases their slots as they end). When every attempt
failed, the first attempt's failure stands (the caller retries it as any failed request).

One `Race` per request of a pool with peers, one task per attempt; a `Flight` is one attempt on the wire.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

S = TypeVar("S")  # an endpoint as the pool keeps it (endpoint_state.EndpointState)


@dataclass(eq=False)
class Flight(Generic[S]):
    """One attempt of a request on the wire: its endpoint, when it went out (after the rate limit), its race (None:
    the pool had no peers when it was sent, and it cannot be hedged)."""

    state: S
    started: float
    race: Race[S] | None = None
    hedged: bool = False


@dataclass(eq=False)
class Race(Generic[S]):
    """The attempts at one request (`fn` of an endpoint), each a task; `first` resolves with the winning task.
    `pinned`: the request must stay on its endpoint (client.same_endpoint_per_prompt): never hedged."""

    fn: Callable[[Any], Awaitable[Any]]
    first: asyncio.Future[asyncio.Task[Any]]
    pinned: bool = False
    attempts: list[asyncio.Task[Any]] = field(default_factory=list)
    where: dict[asyncio.Task[Any], S] = field(default_factory=dict)  # each attempt's endpoint, once chosen

    @classmethod
    def of(cls, fn: Callable[[Any], Awaitable[Any]], pinned: bool = False) -> Race[S]:
        return cls(fn, asyncio.get_running_loop().create_future(), pinned)

    def add(self, task: asyncio.Task[Any], state: S | None = None) -> None:
        """An attempt (its endpoint now, or once it has one: `at`)."""
        self.attempts.append(task)
        if state is not None:
            self.where[task] = state
        task.add_done_callback(self._ended)

    def at(self, state: S) -> None:
        """The running attempt goes to `state`'s endpoint."""
        task = asyncio.current_task()
        assert task is not None
        self.where[task] = state

    def fail(self, error: BaseException) -> None:
        """End the race with `error` (its attempts are cancelled by the caller)."""
        if not self.first.done():
            self.first.set_exception(error)

    def _ended(self, task: asyncio.Task[Any]) -> None:
        problem = None if task.cancelled() else task.exception()  # read: a loser's failure is never logged as lost
        if self.first.done():
            return
        if not task.cancelled() and problem is None:
            self.first.set_result(task)
            return
        if all(t.done() for t in self.attempts):  # every attempt failed: the first real failure stands
            failed = [t for t in self.attempts if not t.cancelled()]
            if failed:
                self.first.set_result(failed[0])
            else:
                self.first.cancel()

    def cancel_rest(self) -> None:
        """Cancel every attempt still running (the losers, or all when the caller is cancelled)."""
        for task in self.attempts:
            if not task.done():
                task.cancel()

    @property
    def original(self) -> S:
        return self.where[self.attempts[0]]
