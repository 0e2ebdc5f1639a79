"""`serve` and `stop` for the roles whose `serve.cluster` is `ray`: each replica is a detached, named Ray actor
(replica.py) in its own placement group (one bundle of `serve.resources`, so a tensor-parallel group
stays on one node), restarted by Ray on a node with room when its node dies (`max_restarts`).

The actor runs the command launcher/commands.py builds for a local server (the same flags for the vLLM release in
the server environment, the same environment); `serve` waits until every replica answers /health and serves the
configured model (backends.identity), as the local launcher does. Before anything is created the replicas are fitted
onto the nodes' free resources: a cluster that cannot hold them is one error naming what was asked and what is
free. Whatever a failed `serve` created is removed again. Ray is imported only here, only when used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .. import constants as C
from ..backends.base import Endpoint
from ..backends.identity import same_model, served_identity
from ..backends.session import Session
from ..config.schema import RoleConfig, RunConfig
from ..errors import ServerError
from ..launcher.commands import is_loopback, serve_spec, server_command, server_env
from ..launcher.processes import healthy
from ..launcher.releases import installed_release, server_venv
from . import replica
from .connect import connect
from .discovery import is_replica_of, replica_name

log = logging.getLogger(__name__)
SHOWN = ("CPU", "GPU")  # resources every capacity error shows, beside those asked


@dataclass(frozen=True)
class ReplicaInfo:
    """One replica that answers: its role, actor name, server URL, node and log (on that node)."""

    role: str
    name: str
    url: str
    node_id: str
    node_ip: str
    pid: int
    log: str


def _roles(cfg: RunConfig) -> dict[str, RoleConfig]:
    return {str(name): role for name, role in cfg.roles.items()}


def ray_roles(cfg: RunConfig, roles: Sequence[str] | None = None) -> list[str]:
    """The roles (of `roles`, default all) that `serve` places on a Ray cluster."""
    names = list(dict.fromkeys(roles)) if roles else list(cfg.roles)
    return [r for r in names if r in cfg.roles and (s := _roles(cfg)[r].serve) is not None and s.cluster == "ray"]


def _free(ray: Any) -> dict[str, dict[str, float]]:
    """Free resources per live node, keyed by "IP (node id)"."""
    ips = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]}
    per_node = ray._private.state.available_resources_per_node()
    return {f"{ips[node]} ({node[:8]})": free for node, free in per_node.items() if node in ips}


def _fmt(resources: dict[str, float], keys: Sequence[str]) -> str:
    return "{" + ", ".join(f"{k}: {resources.get(k, 0):g}" for k in keys) + "}"


def fits(asked: Sequence[tuple[str, dict[str, float]]], free: dict[str, dict[str, float]]) -> bool:
    """Whether every replica (role, resources) fits on one node's free resources (first fit, largest first)."""
    left = {node: dict(res) for node, res in free.items()}
    for _, need in sorted(asked, key=lambda a: -sum(a[1].values())):
        node = next((n for n, res in left.items() if all(res.get(k, 0) >= v for k, v in need.items())), None)
        if node is None:
            return False
        for k, v in need.items():
            left[node][k] -= v
    return True


def capacity_error(asked: Sequence[tuple[str, dict[str, float]]], free: dict[str, dict[str, float]]) -> ServerError:
    """The error naming what was asked and what each node has free."""
    keys = list(dict.fromkeys([*SHOWN, *(k for _, need in asked for k in need)]))
    per_role: dict[str, tuple[int, dict[str, float]]] = {}
    for role, need in asked:
        per_role[role] = (per_role.get(role, (0, need))[0] + 1, need)
    wanted = "; ".join(f"role {r}: {n} replica(s) of {_fmt(need, list(need))}" for r, (n, need) in per_role.items())
    have = "; ".join(f"node {node} {_fmt(res, keys)}" for node, res in free.items()) or "no live node"
    return ServerError(f"the Ray cluster cannot hold what was asked ({wanted}), each replica on one node; free: {have}")


def _launch(
    role: str, role_cfg: RoleConfig, root: Path, needs_key: bool
) -> tuple[list[str], dict[str, str], list[str]]:
    """The server command (its port and host set by the actor on its node), the environment it adds and the
    variables it removes, as the local launcher builds them."""
    spec = serve_spec(role, role_cfg)
    key = role_cfg.api_key(role)
    if key is None and needs_key:
        variable = role_cfg.api_key_env or C.API_KEY_ENV
        raise ServerError(
            f"role {role}: the Ray cluster's nodes are not on loopback: their servers would accept requests from "
            f"any machine without a key. Set {variable} (the servers then require it and the client sends it)"
        )
    command = server_command(role, role_cfg, "http://127.0.0.1:0", root)
    env = server_env(spec, 0, None, key, installed_release(server_venv(root)))
    # server_env starts from this process's environment: each node's actor starts from its own instead
    return command, {k: v for k, v in env.items() if os.environ.get(k) != v}, [k for k in os.environ if k not in env]


def serve_on_ray(
    cfg: RunConfig, roles: Sequence[str] | None = None, repo_root: str | Path | None = None,
    timeout: float = C.SERVER_READY_TIMEOUT_S, announce: Callable[[str], None] | None = None,
    capacity_timeout: float = 0.0, idle_timeout: float | None = None,
) -> list[ReplicaInfo]:  # fmt: skip
    """Start the replicas of the Ray roles; return once every one answers /health and serves its model. On any
    failure every placement group and actor this call created is removed before ServerError is raised.
    `announce` is called once every check passed, before anything is created (with a note when the replicas wait
    for capacity). When the cluster cannot hold the replicas now, `serve` refuses at once, or with a
    `capacity_timeout` creates their placement groups anyway and waits that long for them to be placed: an
    autoscaler (KubeRay's, Ray's) adds nodes for pending placement groups. With an `idle_timeout`, each replica
    removes itself (server, actor, placement group) once its server had no request for that long: a lease that
    frees the GPUs of an evaluation nobody runs any more."""
    root = Path(repo_root or Path.cwd()).resolve()
    names, by_name = ray_roles(cfg, roles), _roles(cfg)
    specs = {r: serve_spec(r, by_name[r]) for r in names}
    ray = connect(list(specs.values()))
    needs_key = any(n["Alive"] and not is_loopback(f"http://{n['NodeManagerAddress']}") for n in ray.nodes())
    launches = {role: _launch(role, by_name[role], root, needs_key) for role in names}
    there = set(ray.util.list_named_actors()) | {
        g["name"] for g in ray.util.placement_group_table().values() if g.get("state") != "REMOVED"
    }  # a replica, or the placement group a crashed serve left
    for role in names:
        if any(is_replica_of(n, role, by_name[role].served_model) for n in there):
            raise ServerError(f"role {role}: replicas of {by_name[role].served_model} are already on the Ray "
                              "cluster (rmbench-client stop --config ... removes them)")  # fmt: skip
    asked = [(r, spec.replica_resources()) for r, spec in specs.items() for _ in range(spec.replicas)]
    free = _free(ray)
    note = ""
    if not fits(asked, free):
        if capacity_timeout <= 0:
            raise capacity_error(asked, free)
        note = f" (no room for them now: waiting up to {capacity_timeout:.0f} s for nodes)"
    if announce is not None:
        announce(note)
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    ray.cloudpickle.register_pickle_by_value(replica)  # the nodes need not have rmbench-client
    actor_class = ray.remote(replica.Replica)
    created: list[tuple[str, str, Any, Any]] = []  # (role, name, placement group, actor or None)
    try:
        for role, spec in specs.items():
            for index in range(spec.replicas):
                name = replica_name(role, by_name[role].served_model, index)
                pg = placement_group([spec.replica_resources()], strategy="STRICT_PACK", name=name, lifetime="detached")
                created.append((role, name, pg, None))
        try:
            ray.get([pg.ready() for _, _, pg, _ in created], timeout=max(C.RAY_PLACEMENT_TIMEOUT_S, capacity_timeout))
        except ray.exceptions.GetTimeoutError:
            raise capacity_error(asked, _free(ray)) from None  # taken meanwhile
        for i, (role, name, pg, _) in enumerate(created):
            bundle = specs[role].replica_resources()
            command, env, unset = launches[role]
            options = {
                "name": name, "namespace": C.RAY_NAMESPACE, "lifetime": "detached",
                "max_restarts": C.RAY_MAX_RESTARTS, "num_cpus": bundle.get("CPU", 0), "num_gpus": bundle.get("GPU", 0),
                "resources": {k: v for k, v in bundle.items() if k not in ("CPU", "GPU", "memory")},
                "scheduling_strategy": PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=0),
            }  # fmt: skip
            if "memory" in bundle:
                options["memory"] = bundle["memory"]
            watch = replica.Watch(C.RAY_REPLICA_HEALTH_PERIOD_S, C.RAY_REPLICA_HEALTH_TIMEOUT_S,
                                      C.RAY_REPLICA_HEALTH_FAILURES, C.RAY_REPLICA_START_TIMEOUT_S,
                                      idle_timeout=idle_timeout, stall_timeout=C.RAY_REPLICA_STALL_S)  # fmt: skip
            actor = actor_class.options(**options).remote(command, env, unset, C.SERVER_STOP_TIMEOUT_S, watch,
                                                          bundle.get("GPU", 0))  # fmt: skip
            created[i] = (role, name, pg, actor)
        return _wait_ready(ray, cfg, created, timeout)
    except BaseException:  # Ctrl-C included: a failed serve leaves nothing on the cluster
        _remove(ray, [(name, pg, actor) for _, name, pg, actor in created])
        raise


def _wait_ready(
    ray: Any, cfg: RunConfig, created: list[tuple[str, str, Any, Any]], timeout: float
) -> list[ReplicaInfo]:
    deadline = time.monotonic() + timeout
    ready: dict[str, ReplicaInfo] = {}
    with httpx.Client(timeout=httpx.Timeout(5.0, connect=1.0), trust_env=False) as client:
        while len(ready) < len(created):
            for role, name, _, actor in created:
                if name in ready:
                    continue
                try:
                    info = ray.get(actor.info.remote(), timeout=C.RAY_CALL_TIMEOUT_S)
                except ray.exceptions.RayActorError as exc:
                    raise ServerError(f"{role} replica {name} failed to start: {exc}") from None
                except ray.exceptions.GetTimeoutError:
                    continue  # its worker is still starting: the deadline below bounds the wait
                if info["exit"] is not None:
                    raise ServerError(
                        f"{role} replica {name} on node {info['node_ip']}: its server exited with status "
                        f"{info['exit']} while starting\nlog {info['log']} (last lines):\n{info.get('tail', '')}"
                    )
                if healthy(client, info["url"]):
                    ready[name] = ReplicaInfo(role, name, info["url"], info["node_id"], info["node_ip"],
                                              info["pid"], info["log"])  # fmt: skip
            if len(ready) < len(created):
                if time.monotonic() > deadline:
                    late = [(name, actor) for _, name, _, actor in created if name not in ready]
                    raise ServerError(f"replicas {', '.join(n for n, _ in late)} did not answer /health within "
                                      f"{timeout:.0f} s{_tails(ray, late)}")  # fmt: skip
                time.sleep(C.SERVER_HEALTH_POLL_S)
    found = list(ready.values())
    for role in dict.fromkeys(r.role for r in found):
        asyncio.run(_identity(role, _roles(cfg)[role], [r.url for r in found if r.role == role]))
    return found


def _tails(ray: Any, late: list[tuple[str, Any]]) -> str:
    """The last lines of the late replicas' server logs (read before `serve` removes them with their replicas)."""
    found = ""
    for name, actor in late:
        with contextlib.suppress(Exception):  # a replica still waiting for a node has no log
            info = ray.get(actor.info.remote(tail=True), timeout=C.RAY_ALIVE_TIMEOUT_S)
            found += f"\n{name} on node {info['node_ip']}, log {info['log']} (last lines):\n{info.get('tail', '')}"
    return found


async def _identity(role: str, role_cfg: RoleConfig, urls: list[str]) -> None:
    """Every replica serves the configured model, and the same one (backends.identity, as a run admits endpoints)."""
    key = role_cfg.api_key(role)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    session = Session(role_cfg.verify_tls, C.CONNECT_TIMEOUT_S, C.READ_TIMEOUT_S, len(urls) + 1)
    try:
        async with httpx.AsyncClient(transport=session.httpx_transport(), trust_env=False) as client:
            eps = [Endpoint(u, role_cfg.served_model, client, headers, transport=session) for u in urls]
            found = await asyncio.gather(*(served_identity(ep, role_cfg.backend) for ep in eps))
    except Exception as exc:
        raise ServerError(f"role {role}: {exc}") from None
    finally:
        await session.aclose()
    for url, other in zip(urls[1:], found[1:], strict=True):
        if not same_model(found[0], other):
            raise ServerError(f"role {role}: the replicas serve different models: {urls[0]} {found[0]}, {url} {other}")


def _remove(ray: Any, replicas: Sequence[tuple[str, Any, Any]]) -> None:
    """Stop each replica's server, kill its actor for good and remove its placement group."""
    for _, _, actor in replicas:
        if actor is not None:
            with contextlib.suppress(Exception):  # a replica waiting for a node (or never placed) has no server
                ray.get(actor.info.remote(), timeout=C.RAY_ALIVE_TIMEOUT_S)
                ray.get(actor.stop.remote(), timeout=C.SERVER_STOP_TIMEOUT_S + 10)
            with contextlib.suppress(Exception):  # its guard ends the server if the stop above could not
                ray.kill(actor, no_restart=True)
    for name, pg, _ in replicas:
        if pg is not None:
            with contextlib.suppress(Exception):
                ray.util.remove_placement_group(pg)
                log.debug("removed placement group %s", name)


def stop_on_ray(cfg: RunConfig, roles: Sequence[str] | None = None) -> list[str]:
    """Remove every replica (actor, server, placement group) of the config's Ray roles; their names."""
    names = ray_roles(cfg, roles)
    if not names:
        return []
    ray = connect([serve_spec(r, _roles(cfg)[r]) for r in names])

    def ours(name: str | None) -> bool:
        return any(is_replica_of(name, r, _roles(cfg)[r].served_model) for r in names)

    actors = [n for n in ray.util.list_named_actors() if ours(n)]
    groups = {info["name"] for info in ray.util.placement_group_table().values()
              if ours(info.get("name")) and info.get("state") != "REMOVED"}  # fmt: skip
    replicas = []
    for name in sorted(set(actors) | groups):
        actor = ray.get_actor(name) if name in actors else None
        pg = ray.util.get_placement_group(name) if name in groups else None
        replicas.append((name, pg, actor))
    _remove(ray, replicas)
    deadline = time.monotonic() + C.RAY_CALL_TIMEOUT_S  # ray.kill returns at once: wait until they are gone
    while any(ours(n) for n in ray.util.list_named_actors()) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [n for n in ray.util.list_named_actors() if ours(n)]
    if left:
        raise ServerError(f"replicas {', '.join(left)} are still on the Ray cluster after stop")
    return sorted(set(actors) | groups)
