"""A replica actor on a real token-auth Ray cluster on loopback (a head and two worker nodes of one CPU each), its
server a light stand-in (tests/fake_replica_server.py: `/health`, 503 on demand, a wedged engine on demand, one
child process as vLLM's engine core): a server that dies, answers 503, or stops answering scoring requests behind a
`/health` that answers, is replaced without any command; however the replica's processes
end (its server killed, its worker SIGKILLed, its node's raylet killed, `stop`), no process of the old server's
group is left and its scratch directory is gone. The replica's server never sees the Ray token, nor a GPU it did not
reserve. With a lease, a replica whose server takes no request for the idle timeout removes itself, placement
group and all. Real vLLM servers as replicas: tests/test_ray.py. Run alone with `pytest -m ray`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import port
from helpers_ray import RAY_2_52_WARNINGS, group_alive, token_auth

from rmbench_client.cluster import replica as ray_replica

LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
os.environ.update(LOOPBACK_ENV)
ray_cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.ray, *RAY_2_52_WARNINGS]

TOKEN = "replica-test-token-0123456789"
SERVER = [sys.executable, str(Path(__file__).with_name("fake_replica_server.py")), "--port", "0", "--host", "x"]
WATCH = ray_replica.Watch(period=1.0, timeout=2.0, failures=3, start_timeout=60.0, linger=2.0, stall_timeout=3.0)


@pytest.fixture(scope="module")
def ray_on_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """`ray` connected to a token-auth cluster (HOME in a temporary directory: no real token is read or written)."""
    import ray

    head = {"num_cpus": 0, "gcs_server_port": port(80), "include_dashboard": False}
    with token_auth(tmp_path_factory.mktemp("home"), TOKEN):
        cluster = ray_cluster_utils.Cluster(initialize_head=True, head_node_args=head)
        try:
            # connected before the worker nodes exist, so the driver is on the head's raylet (Ray 2.52 may take a
            # worker node's, all being on 127.0.0.1, and removing that node would end the driver)
            ray.init(address=cluster.address, namespace="rmbench-test", log_to_driver=False)
            for _ in range(2):
                cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            ray.cloudpickle.register_pickle_by_value(ray_replica)
            yield ray, cluster
        finally:
            ray.shutdown()
            cluster.shutdown()


def server_of(group: int) -> int:
    """The server's pid in the replica's group (not the guard, whose arguments name the server too)."""
    args = {p: Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0") for p in group_alive(group)}
    (pid,) = [p for p, a in args.items() if len(a) > 1 and a[1].endswith(b"fake_replica_server.py")]
    return pid


class Replica:
    """One replica actor (as `serve` creates it, without a placement group) and what it said last."""

    def __init__(self, ray: Any, watch: ray_replica.Watch = WATCH, **options: Any) -> None:
        self.ray = ray
        options = {"name": "reward:fake:0", "lifetime": "detached", "max_restarts": -1, "num_cpus": 1, **options}
        self.actor = ray.remote(ray_replica.Replica).options(**options).remote(SERVER, {}, [], 3.0, watch, 0)
        self.last = self.info()

    def info(self, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                found = self.ray.get(self.actor.info.remote(), timeout=5)
                if found["watched"] and ray_replica.healthy(found["url"], 2):  # the replica's watch saw it up
                    return dict(found)
            except Exception:  # restarting: Ray raises while the actor comes back
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.5)

    def replaced(self, timeout: float = 60) -> dict[str, Any]:
        """Until the replica answers on a new URL (a new server), and that the old one left nothing behind."""
        old = self.last
        deadline = time.monotonic() + timeout
        while (new := self.info())["url"] == old["url"]:
            assert time.monotonic() < deadline, "the replica was not replaced"
            time.sleep(0.5)
        self.last = new
        deadline = time.monotonic() + 10  # the old guard's last steps
        while (group_alive(old["pid"]) or Path(old["log"]).parent.exists()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not group_alive(old["pid"]), "a process of the old server's group is left"
        assert not Path(old["log"]).parent.exists(), "the old replica's scratch directory is left"
        return new


def test_a_replica_outlives_every_way_its_server_ends(ray_on_cluster):
    ray, cluster = ray_on_cluster
    replica = Replica(ray)
    try:
        first = replica.last
        environ = Path(f"/proc/{server_of(first['pid'])}/environ").read_bytes().split(b"\0")
        assert b"CUDA_VISIBLE_DEVICES=" in environ  # no GPU reserved: none seen
        assert not [v for v in environ if v.startswith(b"RAY_AUTH_TOKEN")]  # the node's Ray token stays with Ray
        assert len(group_alive(first["pid"])) == 3  # guard, server, the server's own child

        os.kill(server_of(first["pid"]), signal.SIGKILL)  # the server dies
        replica.replaced()
        os.kill(server_of(replica.last["pid"]), signal.SIGUSR1)  # its engine dies: /health answers 503
        replica.replaced()
        os.kill(server_of(replica.last["pid"]), signal.SIGUSR2)  # its engine is wedged: /health answers, no request
        replica.replaced()
        worker = ray.get(replica.actor.__ray_call__.remote(lambda self: os.getpid()))
        os.kill(worker, signal.SIGKILL)  # the replica's worker dies
        replica.replaced()
        (node,) = [n for n in cluster.worker_nodes if n.node_id == replica.last["node_id"]]
        cluster.remove_node(node)  # its node's raylet is killed
        moved = replica.replaced()
        assert moved["node_id"] != node.node_id

        assert ray.get(replica.actor.stop.remote(), timeout=30)
        assert not group_alive(moved["pid"]) and not Path(moved["log"]).parent.exists()
    finally:
        ray.kill(replica.actor, no_restart=True)


def test_a_replica_nobody_uses_removes_itself(ray_on_cluster):
    import httpx
    from ray.util.placement_group import placement_group, placement_group_table
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    ray, _ = ray_on_cluster
    group = placement_group([{"CPU": 1}], strategy="STRICT_PACK", lifetime="detached")
    ray.get(group.ready(), timeout=60)
    lease = ray_replica.Watch(period=0.5, timeout=2.0, failures=3, start_timeout=60.0, idle_timeout=3.0)
    strategy = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0)
    replica = Replica(ray, lease, name="reward:fake:lease", scheduling_strategy=strategy)
    info = replica.last
    try:
        used = time.monotonic() + 6  # twice the idle timeout, used all the while: it stays
        while time.monotonic() < used:
            assert httpx.get(f"{info['url']}/pooling", timeout=5).status_code == 200
            time.sleep(0.5)
        assert ray.get(replica.actor.info.remote(), timeout=10)["url"] == info["url"]
        deadline = time.monotonic() + 30  # then nobody uses it
        while placement_group_table(group)["state"] != "REMOVED" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert placement_group_table(group)["state"] == "REMOVED"  # its resources are the cluster's again
        with pytest.raises(ValueError):  # the actor is gone for good, not restarted
            for _ in range(20):
                ray.get_actor("reward:fake:lease")
                time.sleep(0.5)
        assert not group_alive(info["pid"]) and not Path(info["log"]).parent.exists()
    finally:
        with contextlib.suppress(Exception):
            ray.kill(replica.actor, no_restart=True)
        with contextlib.suppress(Exception):
            ray.util.remove_placement_group(group)
