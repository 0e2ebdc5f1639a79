"""How an endpoint taken out of a pool comes back: only once it scores.

`/health` answering is not enough: a half-alive server (a stuck collective, a wedged GPU) answers it, passes every
check that does not reach its engine, and never returns a scoring request. So an endpoint taken out waits its
backoff (outliers.next_backoff: it grows each time it is taken out again before it proved itself), then is probed
(`GET /health`, or `GET /v1/models` where there is none: soon at first, then every `probe_interval`) until it
answers, then passes its identity check (admission.py; for a reward model, DPO or a PRM its probe fingerprint: a
real scoring request), and is then back *on probation*: one request at a time (its canary, a real request of the
run) until one succeeds; a failed or silent canary takes it out again, with twice the wait. A check that times out
or fails on the server counts as a failed canary too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from .. import constants as C
from ..errors import ConfigError, RetryableError
from .outliers import next_backoff

if TYPE_CHECKING:
    from .admission import Identity
    from .endpoint_state import EndpointState

log = logging.getLogger(__name__)


class Pool(Protocol):
    """What a comeback needs of the endpoint pool."""

    role: str

    @property
    def probe_interval(self) -> float: ...

    async def admit(self, state: EndpointState) -> Identity | None:
        """The endpoint's identity check (None: the pool has none); ConfigError when it serves another model."""
        ...

    def reject(self, state: EndpointState, problem: ConfigError) -> None:
        """The endpoint serves another model now: it leaves the pool (and is checked again by membership)."""
        ...

    def restore(self, state: EndpointState, identity: Identity | None) -> None:
        """The endpoint is back, on probation."""
        ...


async def comeback(pool: Pool, state: EndpointState) -> None:
    """Bring `state`'s endpoint back once it passes its checks, after its backoff (see the module's doc)."""
    ep = state.endpoint
    await asyncio.sleep(state.backoff)
    interval = min(C.ENDPOINT_FIRST_PROBE_S, pool.probe_interval)
    while True:
        if await state.answers_probe():
            try:
                identity = await pool.admit(state)
                break
            except asyncio.CancelledError:
                raise
            except ConfigError as exc:
                state.why = str(exc)
                pool.reject(state, exc)
                return
            except RetryableError as exc:  # its check reached the server and failed there (a fingerprint timed out)
                state.why = str(exc)
                state.backoff = next_backoff(state.backoff, False, 0.0)
                log.info("%s endpoint %s failed its check (%s); tried again in %.0fs", pool.role, ep, exc,
                         state.backoff)  # fmt: skip
                await asyncio.sleep(state.backoff)
                continue
            except Exception as exc:  # down for now: asked again
                state.why = str(exc)
                log.debug("%s endpoint %s not admitted yet: %s", pool.role, ep, exc)
        await asyncio.sleep(interval)
        interval = min(interval * 2, pool.probe_interval)
    pool.restore(state, identity)
