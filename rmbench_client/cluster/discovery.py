"""Where a role's replicas on a Ray cluster listen now (`endpoints: ray`), read from Ray's state API over HTTP.

`serve` (placement.py) starts each replica as a detached actor named `<role>:<served model>:<index>`
in the namespace `rmbench`; the actor's `repr` is its server's URL (`Replica(http://NODE_IP:PORT)`), and Ray
records an actor's repr each time the actor is created, so after a restart on another node the state API shows
the new URL. One GET of the dashboard's `/api/v0/actors` lists them (state_api.py: the cluster's token sent,
only a whole answer used): about 25 ms, where `import ray` and `ray.init` take seconds (docs/performance.md,
bench/ray_serve.py). The client never imports Ray to run.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlparse

import httpx

from .. import constants as C
from ..config.schema import RoleConfig, ServeSpec
from ..errors import ConfigError, EndpointError
from ..redaction import remember_url
from .state_api import Actor, Node, client_for, filters, read

REPR = re.compile(r"^Replica\((https?://[^)\s]+)\)$")


def replica_name(role: str, served_model: str, index: int) -> str:
    """The Ray actor (and placement group) name of a role's replica `index`."""
    return f"{role}:{served_model}:{index}"


def is_replica_of(name: str | None, role: str, served_model: str) -> bool:
    prefix = f"{role}:{served_model}:"
    return name is not None and name.startswith(prefix) and name[len(prefix) :].isdigit()


def url_of(repr_name: str | None) -> str | None:
    """The server URL an actor's repr carries, or None (an actor that is not, or not yet, a replica)."""
    found = REPR.match(repr_name or "")
    return found.group(1) if found else None


def cluster_address(spec: ServeSpec | None) -> str | None:
    """The cluster's address as `ray.init` takes it: serve.ray_address, else $RAY_ADDRESS."""
    return (spec.ray_address if spec else None) or os.environ.get(C.RAY_ADDRESS_ENV) or None


def dashboard_url(spec: ServeSpec | None, role: str) -> str:
    """The cluster's state API: serve.ray_dashboard, $RAY_API_SERVER_ADDRESS, an http $RAY_ADDRESS, else port 8265
    of the cluster's address (Ray's default dashboard port on the head)."""
    given = (spec.ray_dashboard if spec else None) or os.environ.get(C.RAY_API_ENV)
    address = cluster_address(spec)
    if not given and address and address.startswith(("http://", "https://")):
        given = address
    if given:
        return remember_url(given.rstrip("/"))  # its credentials, should it carry some, are masked where said
    if not address:
        raise ConfigError(
            f"role {role}: endpoints ray needs the cluster's address: set {C.RAY_ADDRESS_ENV} (or "
            f"{C.RAY_API_ENV}, its dashboard) or the role's serve.ray_address"
        )
    host = "127.0.0.1" if address in ("auto", "local") else urlparse(f"//{address.split('://')[-1]}").hostname
    return f"http://{host}:{C.RAY_DASHBOARD_PORT}"


async def list_actors(dashboard: str, client: httpx.AsyncClient | None = None, alive_only: bool = True) -> list[Actor]:
    """The (live) actors of the namespace `rmbench`, whole (state_api.read), filtered by the cluster: the state
    at its data source, the namespace in its API server."""
    wanted = [("ray_namespace", C.RAY_NAMESPACE), *([("state", "ALIVE")] if alive_only else [])]
    if client is not None:
        return await read(client, dashboard, Actor, "actors", filters(wanted))
    async with client_for(dashboard) as own:
        return await read(own, dashboard, Actor, "actors", filters(wanted))


class RayEndpoints:
    """The live URLs of one role's replicas on the cluster: an endpoint source the pool re-reads when a server is
    gone (a replica restarted on another node has a new URL)."""

    def __init__(self, role: str, role_cfg: RoleConfig) -> None:
        self.role = role
        self.served_model = role_cfg.served_model
        self.dashboard = dashboard_url(role_cfg.serve, role)
        self._read = False
        self._where: dict[str, dict[str, str]] = {}  # URL -> its replica and node, as of the last read

    async def urls(self) -> list[str]:
        """The role's replicas that are alive and have a server URL, in replica order."""
        actors = {
            actor.name: (url, actor)
            for actor in await list_actors(self.dashboard)  # its own connection: a read every few seconds at most
            if actor.name is not None
            and is_replica_of(actor.name, self.role, self.served_model)
            and (url := url_of(actor.repr_name))
        }
        found = {name: url for name, (url, _) in actors.items()}
        self._where = {
            url: {"replica": name} | ({"node": actor.node_id} if actor.node_id else {})
            for name, (url, actor) in actors.items()
        }
        if not found and not self._read:  # later, none alive is a passing state: replicas restarting
            raise EndpointError(
                f"no {self.role} replica serving {self.served_model} is alive on the Ray cluster ({self.dashboard}): "
                "start them with `rmbench-client serve --config ...`"
            )
        self._read = True
        return [found[name] for name in sorted(found, key=lambda n: int(n.rsplit(":", 1)[1]))]

    def about(self, url: str) -> dict[str, str]:
        """Where `url`'s server runs (discovery.Described): its replica's actor name and node id, as last read."""
        return dict(self._where.get(url, {}))


async def replicas_by_node(dashboard: str, roles: dict[str, str]) -> dict[str, list[tuple[str, Actor]]]:
    """The replicas of `roles` (role -> served model) that are alive, per node ("IP (node id)"), with their role;
    replicas waiting for a node (restarting, or no room) under "no node"."""
    async with client_for(dashboard) as http:
        actors = await list_actors(dashboard, http, alive_only=False)
        nodes = await read(http, dashboard, Node, "nodes", {})
    ips = {n.node_id: f"{n.node_ip} ({n.node_id[:8]})" for n in nodes if n.state == "ALIVE"}
    found: dict[str, list[tuple[str, Actor]]] = {}
    for actor in sorted(actors, key=lambda a: a.name or ""):
        role = next((r for r, model in roles.items() if actor.name and is_replica_of(actor.name, r, model)), None)
        if role is None or actor.state == "DEAD":
            continue
        where = ips.get(actor.node_id or "", "no node") if actor.state == "ALIVE" else "no node"
        found.setdefault(where, []).append((role, actor))
    return found
