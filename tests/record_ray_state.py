"""Records what a Ray release's state API answers (tests/recorded/ray-state-*-RELEASE.json), for the discovery
tests of every supported Ray release without starting its cluster (tests/test_ray_state_api.py).

Run with the Python of an environment holding that release (`pip install 'ray[default]==X' httpx`):

    python tests/record_ray_state.py tests/recorded       # a token-auth cluster on 127.0.0.1, HOME in a temp dir

It starts a head (no CPU) and one worker node on loopback with token authentication (`RAY_AUTH_MODE=token`, a
made-up token) and the data source's limit at 5 rows (`RAY_MAX_LIMIT_FROM_DATA_SOURCE`), places two actors as
`serve` names them (`reward:tiny-reward:0` and `:1`, whose repr is a made-up URL) and one in another namespace,
restarts one and kills another for good, and records: the live replicas as `endpoints: ray` asks for them, every
actor of the namespace as `status --config` asks, the nodes, a list cut at its source (six actors over the limit
of five), and the dashboard's 401 and 403.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

TOKEN = "recorded-token-0123456789abcdef"
os.environ.update({
    "HOME": tempfile.mkdtemp(prefix="ray-home-"),  # no real token is read or written
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # every node on 127.0.0.1
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": TOKEN,
    "RAY_MAX_LIMIT_FROM_DATA_SOURCE": "5",
})  # fmt: skip

import httpx  # noqa: E402
import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

GCS, DASHBOARD = int(os.environ.get("RECORD_PORT_BASE", "19790")), int(os.environ.get("RECORD_PORT_BASE", "19790")) + 1
URL = f"http://127.0.0.1:{DASHBOARD}"


class Replica:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"

    def __repr__(self) -> str:
        return f"Replica({self.url})"

    def pid(self) -> int:
        return os.getpid()


def get(path: str, params: dict, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{URL}/api/v0/{path}", params={**params, "limit": "10000", "detail": "true"}, headers=headers)


def filters(pairs: list[tuple[str, str]]) -> dict:
    return {"filter_keys": [k for k, _ in pairs], "filter_predicates": ["="] * len(pairs),
            "filter_values": [v for _, v in pairs]}  # fmt: skip


def main(out: Path) -> None:
    head = {"num_cpus": 0, "gcs_server_port": GCS, "include_dashboard": True, "dashboard_port": DASHBOARD,
            "dashboard_host": "127.0.0.1"}  # fmt: skip
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        cluster.add_node(num_cpus=3)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="rmbench", log_to_driver=False)
        remote = ray.remote(Replica)
        opts = {"lifetime": "detached", "max_restarts": -1, "num_cpus": 0.1}
        actors = [remote.options(name=f"reward:tiny-reward:{i}", **opts).remote(40000 + i) for i in range(3)]
        other = remote.options(name="elsewhere", namespace="other", **opts).remote(1)
        pids = ray.get([a.pid.remote() for a in [*actors, other]])
        os.kill(pids[1], 9)  # replica 1 is restarted by Ray
        ray.kill(actors[2], no_restart=True)  # replica 2 is dead for good
        time.sleep(5)
        ray.get(actors[1].pid.remote())
        release = ray.__version__
        alive = filters([("ray_namespace", "rmbench"), ("state", "ALIVE")])
        answers = {
            "actors": get("actors", alive),
            "actors-all": get("actors", filters([("ray_namespace", "rmbench")])),
            "nodes": get("nodes", {}),
        }
        extra = [remote.options(name=f"reward:tiny-reward:{i}", **opts).remote(40000 + i) for i in (3, 4)]
        ray.get([a.pid.remote() for a in extra])  # six actors now: over the source's limit of five
        answers["actors-truncated"] = get("actors", alive)
        for name, answer in answers.items():
            assert answer.status_code == 200, (name, answer.status_code, answer.text[:300])
            (out / f"ray-state-{name}-{release}.json").write_text(json.dumps(answer.json(), indent=1) + "\n")
        refused = {"401": get("actors", alive, token=None), "403": get("actors", alive, token="not-the-token")}
        statuses = {code: {"status": r.status_code, "body": r.text} for code, r in refused.items()}
        (out / f"ray-state-refused-{release}.json").write_text(json.dumps(statuses, indent=1) + "\n")
        print(f"recorded Ray {release}'s answers in {out}")
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
