"""`serve`, `stop` and `status --config` for the roles a config places on a Ray cluster (`serve.cluster: ray`):
the replicas with their node and URL. The local servers' part stays in cli/__init__.py and launcher/processes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from .. import constants as C
from ..config.schema import RunConfig
from ..redaction import masked_url


def serve_replicas(
    cfg: RunConfig, roles: Sequence[str] | None, capacity_timeout: float = 0.0, idle_timeout: float | None = None,
    timeout: float = C.SERVER_READY_TIMEOUT_S,
) -> list[str]:  # fmt: skip
    """Start the Ray roles' replicas (if any), print where each runs; the Ray roles."""
    from ..cluster.placement import ray_roles, serve_on_ray

    names = ray_roles(cfg, roles)
    if names:

        def announce(note: str) -> None:
            sys.stderr.write(f"placing the replicas of {', '.join(names)} on the Ray cluster{note} and waiting until "
                             "each answers /health ...\n")  # fmt: skip

        replicas = serve_on_ray(cfg, names, timeout=timeout, announce=announce, capacity_timeout=capacity_timeout,
                                idle_timeout=idle_timeout)  # fmt: skip
        for r in replicas:
            sys.stdout.write(f"{r.role:<10} {r.url}  ({r.name}, node {r.node_ip} ({r.node_id[:8]}), pid {r.pid}, "
                             f"log {r.log} on that node)\n")  # fmt: skip
    return names


def stop_replicas(cfg: RunConfig, roles: Sequence[str] | None = None) -> list[str]:
    from ..cluster.placement import stop_on_ray

    return stop_on_ray(cfg, roles)


def print_replicas(cfg: RunConfig, as_json: bool) -> int:
    """`status --config C`: the Ray roles' replicas per node, from the cluster's state API."""
    import json

    from ..cluster.discovery import dashboard_url, replicas_by_node, url_of

    roles = {str(r): rc for r, rc in cfg.roles.items() if rc.on_ray}
    if not roles:
        sys.stdout.write("no role of this config is served on a Ray cluster (serve.cluster: ray)\n")
        return 0
    first = next(iter(roles.items()))
    dashboard = dashboard_url(first[1].serve, first[0])
    found = asyncio.run(replicas_by_node(dashboard, {r: rc.served_model for r, rc in roles.items()}))
    rows: dict[str, list[dict[str, Any]]] = {
        node: [
            {
                "role": role,
                "name": a.name,
                "state": a.state,
                "url": url_of(a.repr_name) if a.state == "ALIVE" else None,
                "restarts": int(a.num_restarts),
            }
            for role, a in replicas
        ]  # fmt: skip
        for node, replicas in found.items()
    }
    if as_json:
        sys.stdout.write(json.dumps({"dashboard": masked_url(dashboard), "nodes": rows}) + "\n")
        return 0
    if not rows:
        sys.stdout.write(f"no replica of {', '.join(roles)} on the Ray cluster ({masked_url(dashboard)})\n")
    for node, replicas in rows.items():
        sys.stdout.write(f"node {node}\n")
        for row in replicas:
            where = row["url"] or row["state"].lower()
            sys.stdout.write(f"  {row['role']:<10} {where}  ({row['name']}, restarts {row['restarts']})\n")
    return 0
