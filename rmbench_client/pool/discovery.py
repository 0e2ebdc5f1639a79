"""Where a role's endpoints come from: an `EndpointSource` lists the role's live base URLs now.

The endpoint pool reads its source at start, and again every `client.endpoint_refresh` seconds for the whole run
(membership.py). URLs the source newly lists are admitted (the identity check of admission.py) before they get
work; URLs it no longer lists leave the pool once their calls in flight end. A read that raises leaves the pool as
it is: a source whose answer is incomplete (a truncated registry listing) must raise rather than list fewer. The
config's list is the static source; a cluster's registry is another (`source_for`). A source may also say where a
URL's server runs (`Described.about`: a Ray replica's actor name and node id), which every answer then records.
"""

from __future__ import annotations

from typing import Protocol

from ..config.schema import RoleConfig


class EndpointSource(Protocol):
    """The live base URLs of one role (without a trailing slash); may raise while the registry is unreachable."""

    async def urls(self) -> list[str]: ...


class Described(Protocol):
    """A source that also says where a URL's server runs, as of its last read: `{"replica": ..., "node": ...}`
    (either may be missing), recorded with every answer from that URL (provenance.py)."""

    def about(self, url: str) -> dict[str, str]: ...


class StaticSource:
    """The URLs a config lists: the same on every read."""

    def __init__(self, urls: list[str]) -> None:
        self._urls = list(dict.fromkeys(u.rstrip("/") for u in urls))

    async def urls(self) -> list[str]:
        return list(self._urls)


def source_for(name: str, role: RoleConfig) -> EndpointSource:
    """The source of role `name`'s endpoints: the config's list, or the replicas on a Ray cluster."""
    if role.on_ray:
        from ..cluster.discovery import RayEndpoints  # imported only when used

        return RayEndpoints(name, role)
    return StaticSource(role.urls())
