"""Where a role's endpoints come from: an `EndpointSource` lists the role's live base URLs now.

The endpoint pool reads its source at start, and again (at most every `ENDPOINT_SOURCE_REFRESH_S`) while it is
short of endpoints: one was taken out or dropped, or every one is down. URLs the source newly lists are admitted
(the identity check of admission.py) before they get work; URLs it no longer lists leave the pool once their
calls in flight end. The config's list is the static source; a cluster's registry is another (`source_for`).
"""

from __future__ import annotations

from typing import Protocol

from .config import RoleConfig


class EndpointSource(Protocol):
    """The live base URLs of one role (without a trailing slash); may raise while the registry is unreachable."""

    async def urls(self) -> list[str]: ...


class StaticSource:
    """The URLs a config lists: the same on every read."""

    def __init__(self, urls: list[str]) -> None:
        self._urls = list(dict.fromkeys(u.rstrip("/") for u in urls))

    async def urls(self) -> list[str]:
        return list(self._urls)


def source_for(name: str, role: RoleConfig) -> EndpointSource:
    """The source of role `name`'s endpoints: the config's list, or the replicas on a Ray cluster."""
    if role.on_ray:
        from .ray_discovery import RayEndpoints  # imported only when used

        return RayEndpoints(name, role)
    return StaticSource(role.urls())
