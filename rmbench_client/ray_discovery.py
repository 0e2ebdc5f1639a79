"""Where a role's replicas on a Ray cluster listen now (`endpoints: ray`), read from Ray's state API over HTTP.

`serve` (launcher/ray_cluster.py) starts each replica as a detached actor named `<role>:<served model>:<index>`
in the namespace `rmbench`; the actor's `repr` is its server's URL (`Replica(http://NODE_IP:PORT)`), and Ray
records an actor's repr each time the actor is created, so after a restart on another node the state API shows
the new URL. One GET of the dashboard's `/api/v0/actors` lists them: about 25 ms, where `import ray` and
`ray.init` take seconds (docs/performance.md, bench/ray_serve.py). The client never imports Ray to run.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlparse

import httpx
import msgspec

from . import constants as C
from .config import RoleConfig, ServeSpec
from .errors import ConfigError, EndpointError

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


class Actor(msgspec.Struct, kw_only=True):
    """What the state API says of one actor (the fields read here)."""

    name: str | None = None
    state: str
    node_id: str | None = None
    repr_name: str | None = None
    num_restarts: int | str = 0  # the API sends it as a string


class _Listing(msgspec.Struct):
    result: list[Actor]


class _Data(msgspec.Struct):
    result: _Listing


class _Answer(msgspec.Struct):
    data: _Data


_DECODER = msgspec.json.Decoder(_Answer)


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
        return given.rstrip("/")
    if not address:
        raise ConfigError(
            f"role {role}: endpoints ray needs the cluster's address: set {C.RAY_ADDRESS_ENV} (or "
            f"{C.RAY_API_ENV}, its dashboard) or the role's serve.ray_address"
        )
    host = "127.0.0.1" if address in ("auto", "local") else urlparse(f"//{address.split('://')[-1]}").hostname
    return f"http://{host}:{C.RAY_DASHBOARD_PORT}"


def _client(url: str) -> httpx.AsyncClient:
    # a proxy from the environment must not stand between the client and a cluster on this machine
    loopback = urlparse(url).hostname in ("127.0.0.1", "localhost", "::1")
    return httpx.AsyncClient(timeout=C.RAY_DISCOVERY_TIMEOUT_S, trust_env=not loopback)


async def list_actors(dashboard: str, client: httpx.AsyncClient | None = None, alive_only: bool = True) -> list[Actor]:
    """The (live) actors of the namespace `rmbench`; EndpointError naming the dashboard when it cannot be read."""
    keys, values = ["ray_namespace", "state"], [C.RAY_NAMESPACE, "ALIVE"]
    n = 2 if alive_only else 1
    params = {
        "filter_keys": keys[:n],
        "filter_predicates": ["="] * n,
        "filter_values": values[:n],
        "detail": "true",
        "limit": "10000",
    }
    own = client is None
    http = client or _client(dashboard)
    try:
        response = await http.get(f"{dashboard}/api/v0/actors", params=params)
        if response.status_code != 200:
            raise EndpointError(f"Ray state API {dashboard} answered {response.status_code}: {response.text[:200]}")
        return _DECODER.decode(response.content).data.result.result
    except httpx.HTTPError as exc:
        raise EndpointError(f"Ray state API {dashboard} is not reachable ({type(exc).__name__}: {exc})") from None
    except msgspec.ValidationError as exc:
        raise EndpointError(f"Ray state API {dashboard}: unexpected answer ({exc})") from None
    finally:
        if own:
            await http.aclose()


class RayEndpoints:
    """The live URLs of one role's replicas on the cluster: an endpoint source the pool re-reads when a server is
    gone (a replica restarted on another node has a new URL)."""

    def __init__(self, role: str, role_cfg: RoleConfig) -> None:
        self.role = role
        self.served_model = role_cfg.served_model
        self.dashboard = dashboard_url(role_cfg.serve, role)
        self._read = False

    async def urls(self) -> list[str]:
        """The role's replicas that are alive and have a server URL, in replica order."""
        found = {
            actor.name: url
            for actor in await list_actors(self.dashboard)  # its own connection: a read every few seconds at most
            if actor.name is not None
            and is_replica_of(actor.name, self.role, self.served_model)
            and (url := url_of(actor.repr_name))
        }
        if not found and not self._read:  # later, none alive is a passing state: replicas restarting
            raise EndpointError(
                f"no {self.role} replica serving {self.served_model} is alive on the Ray cluster ({self.dashboard}): "
                "start them with `rmbench-client serve --config ...`"
            )
        self._read = True
        return [found[name] for name in sorted(found, key=lambda n: int(n.rsplit(":", 1)[1]))]


class Node(msgspec.Struct, kw_only=True):
    node_id: str
    node_ip: str | None = None
    state: str = ""


class _NodeListing(msgspec.Struct):
    result: list[Node]


class _NodeData(msgspec.Struct):
    result: _NodeListing


class _NodeAnswer(msgspec.Struct):
    data: _NodeData


async def replicas_by_node(dashboard: str, roles: dict[str, str]) -> dict[str, list[tuple[str, Actor]]]:
    """The replicas of `roles` (role -> served model) that are alive, per node ("IP (node id)"), with their role;
    replicas waiting for a node (restarting, or no room) under "no node"."""
    async with _client(dashboard) as http:
        actors = await list_actors(dashboard, http, alive_only=False)
        try:
            response = await http.get(f"{dashboard}/api/v0/nodes", params={"limit": "10000"})
            nodes = msgspec.json.decode(response.content, type=_NodeAnswer).data.result.result
        except (httpx.HTTPError, msgspec.ValidationError) as exc:
            raise EndpointError(f"Ray state API {dashboard}: cannot list the nodes ({exc})") from None
    ips = {n.node_id: f"{n.node_ip} ({n.node_id[:8]})" for n in nodes if n.state == "ALIVE"}
    found: dict[str, list[tuple[str, Actor]]] = {}
    for actor in sorted(actors, key=lambda a: a.name or ""):
        role = next((r for r, model in roles.items() if actor.name and is_replica_of(actor.name, r, model)), None)
        if role is None or actor.state == "DEAD":
            continue
        where = ips.get(actor.node_id or "", "no node") if actor.state == "ALIVE" else "no node"
        found.setdefault(where, []).append((role, actor))
    return found
