"""The identity checks of an endpoint pool's members at work (endpoint_pool.py): over every new connection before it
carries a request (backends/connection_check.py), and once more at the end of scoring. Each passed check re-reads
the release the endpoint reports, so that its answers from then on are attributed to the release that gave them
(a rolling upgrade behind one URL is recorded right: pool/provenance.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError, EndpointChanged, RetryableError, RmbError

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
    """Every member at work checked once more: those that serve another model now, with what was found (a member
    that cannot be asked now is not judged)."""
    found = await asyncio.gather(*(admission.recheck(s.endpoint) for s in at_work), return_exceptions=True)
    changed = []
    for state, result in zip(at_work, found, strict=True):
        if isinstance(result, ConfigError):
            changed.append((state, str(result)))
        elif isinstance(result, asyncio.CancelledError):
            raise result
        elif not isinstance(result, BaseException):
            state.reports(result)
    return changed
