"""The clock of a role with no endpoint at work (endpoint_pool.py): `rejected_grace` seconds while every listed
endpoint serves another model, `all_down_patience` otherwise (one is down, or none is listed). When it runs out, the
pool is down: one EndpointError naming each URL and why it is out, which every waiting and every later call raises,
so the run ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..errors import EndpointError

log = logging.getLogger(__name__)
Outside = Callable[[], dict[str, tuple[bool, str]]]  # each listed URL not at work: (serves another model, why out)


class Outage:
    """The outage clock of one role."""

    def __init__(self, role: str, patience: float, grace: float, outside: Outside,
                 down: Callable[[EndpointError], None]) -> None:  # fmt: skip
        self.role = role
        self.patience = patience
        self.grace = grace
        self._outside = outside
        self._down = down
        self._clock: tuple[str, asyncio.TimerHandle] | None = None  # why no endpoint is at work, and its clock

    def reassess(self, at_work: bool) -> None:
        """Start, switch or stop the clock (`at_work`: an endpoint of the role is at work, or the pool is down)."""
        if at_work:
            self.stop()
            return
        out = self._outside()
        mode = "rejected" if out and all(rejected for rejected, _ in out.values()) else "down"
        if self._clock is not None:
            if self._clock[0] == mode:
                return
            self._clock[1].cancel()
        wait = self.grace if mode == "rejected" else self.patience
        if mode == "rejected":
            log.warning("every %s endpoint serves another model; waiting up to %.0fs for the right one", self.role,
                        wait)  # fmt: skip
        else:
            log.warning("no %s endpoint is at work; waiting up to %.0fs", self.role, wait)
        self._clock = (mode, asyncio.get_running_loop().call_later(wait, self._give_up))

    def stop(self) -> None:
        if self._clock is not None:
            self._clock[1].cancel()
            self._clock = None

    def _give_up(self) -> None:
        assert self._clock is not None
        mode, _ = self._clock
        self._clock = None
        out = self._outside()
        if mode == "rejected":
            listed = "; ".join(f"{url}: {why}" for url, (_, why) in out.items())
            message = f"every {self.role} endpoint serves another model (for {self.grace:.0f}s): {listed}"
        elif not out:
            message = f"the {self.role} endpoint list stayed empty for {self.patience:.0f}s (its source lists none)"
        elif not any(rejected for rejected, _ in out.values()):
            message = f"every {self.role} endpoint stayed down for {self.patience:.0f}s: {', '.join(out)}"
        else:
            listed = "; ".join(f"{url} {'serves another model' if rejected else 'is down'} ({why})"
                               for url, (rejected, why) in out.items())  # fmt: skip
            message = f"no {self.role} endpoint could be used for {self.patience:.0f}s: {listed}"
        self._down(EndpointError(message))
