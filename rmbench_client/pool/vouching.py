"""The identity checks of an endpoint pool's members at work (endpoint_pool.py): over every new connection before it
carries a request (backends/connection_check.py), and once more at the end of scoring. Each passed check re-reads
the release the endpoint reports, so that its answers from then on are attributed to the release that gave them
(a rolling upgrade behind one URL is recorded right: pool/provenance.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError, EndpointChanged, RetryableError, RmbError
from .outliers import limit

if TYPE_CHECKING:
    from .admission import AdmissionCheck
    from .endpoint_state import EndpointState


async def vouch_connection(admission: AdmissionCheck, state: EndpointState) -> None:
    """Admission's recheck of `state` over the new connection the caller's request is taking: EndpointChanged when
    it serves another model now, RetryableError when it cannot be vouched for; its release is noted."""
    try:
        identity = await admission.recheck(state.endpoint)
    except ConfigError as exc:
        raise EndpointChanged(state.endpoint.url, str(exc)) from None
    except RetryableError:
        raise
    except RmbError as exc:  # a fingerprint answered wrongly, a path gone: this server cannot be vouched for
        raise RetryableError(f"{state.endpoint}: its identity check failed: {exc}") from None
    state.reports(identity)


async def vouch_at_end(admission: AdmissionCheck, at_work: Sequence[EndpointState]) -> list[tuple[EndpointState, str]]:
    """Every member at work checked once more: those that serve another model now, with what was found. A member that
    cannot be asked now is not judged, nor one still silent long after its peers answered (outliers.limit: a frozen
    server would otherwise hold the end of the run for its read timeout)."""
    checks = [asyncio.ensure_future(admission.recheck(s.endpoint)) for s in at_work]
    try:
        started = time.monotonic()
        await asyncio.wait(checks, return_when=asyncio.FIRST_COMPLETED) if checks else None
        bar = limit([time.monotonic() - started])
        assert bar is not None
        await asyncio.wait(checks, timeout=bar.seconds - (time.monotonic() - started)) if len(checks) > 1 else None
    finally:
        for check in checks:
            check.cancel()
    changed = []
    for state, check in zip(at_work, checks, strict=True):
        if not check.done() or check.cancelled():  # not asked in time: not judged
            continue
        if isinstance(problem := check.exception(), ConfigError):
            changed.append((state, str(problem)))
        elif problem is None:
            state.reports(check.result())
    return changed
