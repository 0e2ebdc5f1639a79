"""Serving on a Ray cluster: a real multi-node Ray cluster on this machine with token authentication on
(ray.cluster_utils.Cluster: a head and up to three worker nodes of one CPU each, every node on 127.0.0.1; HOME in a
temporary directory, the token in RAY_AUTH_TOKEN), tiny vLLM CPU servers as replicas.

Without the token, or with a wrong one, `serve`, `stop`, `status` and `run` each say in one line what to set;
with it, `serve` waits for room while nodes arrive (as an autoscaler adds them) and places two replicas on two
nodes; a run over them equals a single local server's run sample for sample (RM-Bench's, and RewardMATH's and
IF-RewardBench's several responses per prompt); a replica's vLLM server killed mid-run
costs nothing, and the replica is serving again without any command; a node whose processes freeze (SIGSTOP)
mid-run costs only its requests in flight, and its replica comes back on another node; a node lost mid-run costs
nothing (its replica comes back on the spare node and joins the run after its identity check); with no node left the
run ends resumable, and resumes once a node is back; a cluster that cannot hold what is asked is one error and
nothing is left on it; `stop` leaves no actor, no placement group and no server process. Run alone with
`pytest -m ray`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import CPU_DEMO_CONFIG, REPO, TINY_MODELS, ensure_server_side, port, with_ports
from helpers_cli import (
    CLI,
    RUN_TIMEOUT,
    TINY_REWARD_TEMPLATE,
    cli,
    one_error_line,
    sample_lines,
    start_run,
    summary,
    wait_for_lines,
)
from helpers_data import same_up_to_batching
from helpers_ray import RAY_2_52_WARNINGS, group_alive, node_processes, server_processes, servers_on, token_auth
from new_benchmarks_fixture import write_if, write_rewardmath

from rmbench_client.cluster.discovery import is_replica_of, list_actors, url_of
from rmbench_client.config.loading import load_config
from rmbench_client.launcher import start_servers, stop_servers

# Every node, and every process that joins the cluster, on 127.0.0.1 (../shared/notes/ray-local-cluster.md).
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
os.environ.update(LOOPBACK_ENV)
ray_cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.ray, pytest.mark.server, *RAY_2_52_WARNINGS]

GCS, DASHBOARD = port(60), port(65)
DASHBOARD_URL = f"http://127.0.0.1:{DASHBOARD}"
TOKEN = "ray-test-token-0123456789abcdef"  # made up: the cluster's token, in RAY_AUTH_TOKEN only
# Ray's node health check, quicker than its defaults (period 3 s, timeout 10 s, 5 failures): a frozen node is found
# dead in seconds (bench/ray_faults.py measures the defaults)
HEALTH_CHECK = {"health_check_period_ms": 1000, "health_check_timeout_ms": 2000, "health_check_failure_threshold": 5}
SERVE_TIMEOUT = 600  # a vLLM CPU server's start on two cores other checkouts' tests share: minutes at worst
PROMPTS = 60  # of the chat file: enough for a node to be lost and its replica to come back mid-run
RATE = 1.2  # requests (one per prompt) per second: the run outlasts a replica's restart on the spare node


def ray_config(path: Path, replicas: int = 2, resources: dict | None = None, **client) -> Path:
    serve = {
        "engine": "vllm-cpu", "path": str(TINY_MODELS / "reward"), "dtype": "float32", "max_model_len": 4096,
        "cluster": "ray", "ray_address": f"127.0.0.1:{GCS}", "ray_dashboard": DASHBOARD_URL,
        "replicas": replicas, "resources": resources or {"CPU": 1},
    }  # fmt: skip
    cfg = {
        "benchmark": "rm-bench", "model": "tiny-reward", "limit": PROMPTS,
        "roles": {"reward": {"served_model": "tiny-reward", "endpoints": "ray", "serve": serve}},
        "reward": {"template": str(TINY_REWARD_TEMPLATE)}, "client": client,
    }  # fmt: skip
    path.write_text(yaml.safe_dump(cfg))
    return path


def client_env(**changes: str | None) -> dict[str, str]:
    """The environment of a client command: the token in RAY_AUTH_TOKEN, RAY_AUTH_MODE unset (the client turns
    token mode on itself); `changes` set (None: removed)."""
    env = {k: v for k, v in (os.environ | LOOPBACK_ENV).items() if k != "RAY_AUTH_MODE"}
    for name, value in changes.items():
        env.pop(name, None)
        if value is not None:
            env[name] = value
    return env


def run_cli(*args: str, timeout: float = RUN_TIMEOUT, env: dict[str, str] | None = None):
    return cli(*args, env=env or client_env(), timeout=timeout, cwd=REPO)


SEEN_PORTS: set[int] = set()  # every port a replica's server listened on: none may be left at the end


def replicas() -> dict[str, tuple[str, str]]:
    """Our live replicas on the cluster: name -> (node id, URL)."""
    actors = asyncio.run(list_actors(DASHBOARD_URL))
    found = {
        a.name: (a.node_id or "", url_of(a.repr_name) or "")
        for a in actors
        if a.name and is_replica_of(a.name, "reward", "tiny-reward")
    }
    SEEN_PORTS.update(int(url.rsplit(":", 1)[1]) for _, url in found.values() if url)
    return found


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers_data import require_rmbench

    out = tmp_path_factory.mktemp("raydata")
    (out / "chat_filtered.json").symlink_to(require_rmbench() / "chat_filtered.json")
    return out


@pytest.fixture(scope="module")
def new_data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A few prompts of two benchmarks of other kinds: RewardMATH (one chosen solution among nine rejected ones) and
    IF-RewardBench (a preference graph over several responses), in their own layouts."""
    root = tmp_path_factory.mktemp("newdata")
    return {
        "rewardmath": write_rewardmath(root / "rewardmath" / "RewardMATH_direct.json", problems=3),
        "if-reward-bench": write_if(root / "if-reward-bench" / "if_rewardbench.json", instructions=4),
    }


@pytest.fixture(scope="module")
def local_runs(data: Path, new_data: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same prompts on one server started by the local launcher: what every Ray run must equal (RM-Bench's, and
    each of `new_data`'s benchmarks')."""
    ensure_server_side()
    tmp = tmp_path_factory.mktemp("local")
    cfg = with_ports(load_config(CPU_DEMO_CONFIG), {"reward": port(66)})  # not the session servers' port(1)
    servers = start_servers(cfg, roles=["reward"], repo_root=REPO, state_dir=tmp / "state")
    runs = {"rm-bench": tmp / "run"} | {name: tmp / name for name in new_data}
    try:
        config = tmp / "c.yaml"
        text = {"benchmark": "rm-bench", "model": "tiny-reward", "limit": PROMPTS,
                "reward": {"template": str(TINY_REWARD_TEMPLATE)},
                "roles": {"reward": {"served_model": "tiny-reward", "endpoints": [servers[0].url]}}}  # fmt: skip
        config.write_text(yaml.safe_dump(text))
        for name, out in runs.items():
            where = (
                ["--data", str(data)] if name == "rm-bench" else ["--benchmark", name, "--data", str(new_data[name])]
            )
            proc = run_cli("run", "--config", str(config), *where, "--out", str(out), "--no-progress")
            assert proc.returncode == 0, proc.stderr[-2000:]
    finally:
        stop_servers(tmp / "state")
    return runs


@pytest.fixture(scope="module")
def local_run(local_runs: dict[str, Path]) -> Path:
    return local_runs["rm-bench"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A head (no CPU: nothing runs there) and one worker node of one CPU, all on 127.0.0.1, with token
    authentication (HOME in a temporary directory: no real token is read or written); `served` adds two more."""
    head = {"num_cpus": 0, "gcs_server_port": GCS, "include_dashboard": True, "dashboard_port": DASHBOARD,
            "dashboard_host": "127.0.0.1", "_system_config": HEALTH_CHECK}  # fmt: skip
    with token_auth(tmp_path_factory.mktemp("home"), TOKEN):
        c = ray_cluster_utils.Cluster(initialize_head=True, head_node_args=head)
        try:
            c.add_node(num_cpus=1)  # two more come while `serve` waits for room (`served`)
            c.wait_for_nodes()
            yield c
        finally:
            c.shutdown()


def samples(run_dir: Path) -> list[dict]:
    return sample_lines(run_dir)  # without answered_by: a replica's URL is not the local server's


def assert_same_samples(run_dir: Path, reference: Path) -> None:
    got, want = samples(run_dir), samples(reference)
    ids = [s["id"] for s in got]
    assert len(ids) == len(set(ids)), "a prompt was written twice"
    got, want = sorted(got, key=lambda s: s["id"]), sorted(want, key=lambda s: s["id"])
    assert same_up_to_batching(got, want), (got, want)
    assert same_up_to_batching(summary(run_dir)["domains"], summary(reference)["domains"])


def test_no_room_is_one_error_and_leaves_nothing(cluster, tmp_path):
    ensure_server_side()
    config = ray_config(tmp_path / "big.yaml", replicas=2, resources={"CPU": 2})
    proc = run_cli("serve", "--config", str(config))
    line = one_error_line(proc, 1, "cannot hold", "role reward: 2 replica(s) of {CPU: 2}", "free: node 127.0.0.1")
    assert line.count("node 127.0.0.1") == 2  # the head and the one worker, each with what it has free
    assert replicas() == {}
    table = cluster_placement_groups()
    assert not [g for g in table if is_replica_of(g["name"], "reward", "tiny-reward") and g["state"] != "REMOVED"]


def cluster_placement_groups() -> list[dict]:
    import httpx

    auth = {"Authorization": f"Bearer {TOKEN}"}
    answer = httpx.get(f"{DASHBOARD_URL}/api/v0/placement_groups", params={"limit": "1000"}, headers=auth, timeout=10)
    answer = answer.json()
    return list(answer["data"]["result"]["result"])


@pytest.fixture(scope="module")
def served(cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[int], set[int]]]:
    """Two replicas served on the cluster: the config (its runs rate-limited, so that one outlasts a replica's
    restart), and each replica's server process group and port as `serve` printed them."""
    config = ray_config(tmp_path_factory.mktemp("ray") / "ray.yaml", **{"rate_limit": RATE, "all_down_patience": 60})
    # one worker node holds one replica: `serve` waits for room while two nodes arrive, as an autoscaler adds them
    args = [CLI, "serve", "--config", str(config), "--capacity-timeout", "300", "--timeout", str(SERVE_TIMEOUT)]
    serve = subprocess.Popen(args, env=client_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=REPO)  # fmt: skip
    try:
        assert serve.stderr is not None
        line = serve.stderr.readline()
        assert "no room for them now: waiting up to 300 s for nodes" in line, line + serve.communicate()[1]
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        out, err = serve.communicate(timeout=SERVE_TIMEOUT + 60)
        proc = subprocess.CompletedProcess(serve.args, serve.returncode, out, line + err)
        assert proc.returncode == 0, proc.stderr[:3000]
        groups = [int(g) for g in re.findall(r", pid (\d+),", proc.stdout)]
        ports = {int(p) for p in re.findall(r"http://127\.0\.0\.1:(\d+)", proc.stdout)}
        assert len(groups) == 2 and len(ports) == 2, proc.stdout
        yield config, groups, ports
    finally:
        if serve.poll() is None:
            serve.kill()
        run_cli("stop", "--config", str(config))


def test_two_replicas_on_two_nodes_equal_a_local_run(served, local_run, data, tmp_path):
    config, _, _ = served
    found = replicas()
    assert len(found) == 2 and len({node for node, _ in found.values()}) == 2  # one replica per node
    status = json.loads(run_cli("status", "--config", str(config), "--json").stdout)
    assert sorted(len(rows) for rows in status["nodes"].values()) == [1, 1]
    fast = ray_config(tmp_path / "fast.yaml")  # the same replicas, no rate limit
    proc = run_cli("run", "--config", str(fast), "--data", str(data), "--out", str(tmp_path / "run"), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert_same_samples(tmp_path / "run", local_run)
    # each answer names its replica and that replica's node, as the cluster listed them
    where = {url: {"replica": name, "node": node} for name, (node, url) in found.items()}
    for line in sample_lines(tmp_path / "run", keep_answerers=True):
        for answerer in line["answered_by"]:
            assert {k: answerer.get(k) for k in ("replica", "node")} == where[answerer["url"]], line
    answered = summary(tmp_path / "run")["answered_by"]
    assert {a["replica"] for a in answered} == set(found), answered  # both replicas answered


@pytest.mark.parametrize("benchmark", ["rewardmath", "if-reward-bench"])
def test_benchmarks_of_other_kinds_on_the_replicas_equal_a_local_run(served, local_runs, new_data, benchmark, tmp_path):
    """Several responses per prompt (best-of-N, a ranked list) through the replicas, as through one local server."""
    fast = ray_config(tmp_path / "fast.yaml")
    out = tmp_path / "run"
    proc = run_cli("run", "--config", str(fast), "--benchmark", benchmark, "--data", str(new_data[benchmark]),
                   "--out", str(out), "--no-progress")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = sorted(samples(out), key=lambda s: s["id"])
    want = sorted(samples(local_runs[benchmark]), key=lambda s: s["id"])
    assert got and same_up_to_batching(got, want), (got, want)
    found = summary(out)  # (partial: a few prompts of each, not every group)
    assert found["failed"] == 0 and found["answered_by"]
    assert {a["replica"] for a in found["answered_by"]} <= set(replicas())


def test_without_the_token_each_command_says_what_to_set(served, data, tmp_path):
    config, _, _ = served
    run = ["--data", str(data), "--out", str(tmp_path / "run"), "--no-progress"]
    for env, words in (
        (client_env(RAY_AUTH_TOKEN=None), "no token is set"),
        (client_env(RAY_AUTH_TOKEN="not-the-token"), "refused the token from RAY_AUTH_TOKEN"),
    ):
        for command in (["serve"], ["stop"], ["status"], ["run", *run]):
            proc = run_cli(command[0], "--config", str(config), *command[1:], env=env, timeout=60)
            line = one_error_line(proc, 2, DASHBOARD_URL, words, "RAY_AUTH_TOKEN")
            assert "not-the-token" not in line
    assert len(replicas()) == 2  # `stop` without the token removed nothing
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def wait_replaced(name: str, old_url: str, timeout: float = SERVE_TIMEOUT) -> tuple[str, str]:
    """Until replica `name` serves again on another URL (its node id, URL)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        node, url = replicas().get(name, ("", ""))
        if url and url != old_url and healthy(url):
            return node, url
        time.sleep(1)
    raise AssertionError(f"replica {name} was not serving again within {timeout:.0f} s")


@pytest.mark.heavy  # a vLLM CPU replica restarted mid-run: minutes; `make test-heavy`
def test_a_server_killed_mid_run_is_replaced(served, local_run, data, tmp_path):
    config, _, _ = served
    name = "reward:tiny-reward:0"
    node, url = replicas()[name]
    (server,) = server_processes(url)
    group = os.getpgid(server)
    run = start_run(config, data, tmp_path / "run", "-v")
    wait_for_lines(tmp_path / "run", 5, run)
    os.kill(server, signal.SIGKILL)  # its vLLM server dies; the replica (its actor) does not
    _, err = run.communicate(timeout=RUN_TIMEOUT)
    assert run.returncode == 0, err[-3000:]
    assert_same_samples(tmp_path / "run", local_run)
    new_node, _ = wait_replaced(name, url)  # without any command
    assert new_node == node  # its placement group's node had room
    assert not group_alive(group)  # nothing of the old server is left


@pytest.mark.heavy  # a vLLM CPU replica restarted mid-run: minutes; `make test-heavy`
def test_a_frozen_node_costs_only_its_requests_in_flight(served, cluster, local_run, data, tmp_path):
    config, _, _ = served
    name = "reward:tiny-reward:1"
    node_id, url = replicas()[name]
    (node,) = [n for n in cluster.worker_nodes if n.node_id == node_id]
    (server,) = server_processes(url)
    group = os.getpgid(server)
    quick = ray_config(tmp_path / "quick.yaml", rate_limit=RATE, all_down_patience=60)  # the default timeouts
    run = start_run(quick, data, tmp_path / "run", "-v")
    wait_for_lines(tmp_path / "run", 5, run)
    frozen = node_processes(node) + group_alive(group)  # the node's Ray processes, its workers, the replica's server
    for pid in frozen:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:
        _, err = run.communicate(timeout=RUN_TIMEOUT)
        assert run.returncode == 0, err[-3000:]
        assert_same_samples(tmp_path / "run", local_run)
        new_node, _ = wait_replaced(name, url)  # Ray found the node dead and started the replica on the spare
        assert new_node != node_id
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 60
        try:  # running again, the dead node's raylet ends, its worker, then the old server
            while group_alive(group) and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:  # whatever failed above: a spare node again, for the node lost next
            with contextlib.suppress(Exception):
                cluster.remove_node(node, allow_graceful=False)
            cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
    assert not group_alive(group)


@pytest.mark.heavy  # a vLLM CPU replica restarted mid-run: minutes; `make test-heavy`
def test_node_lost_mid_run_costs_nothing(served, cluster, local_run, data, tmp_path):
    config, _, _ = served
    before = replicas()
    lost_node, lost_url = before["reward:tiny-reward:0"]
    run = start_run(config, data, tmp_path / "run", "-v")
    wait_for_lines(tmp_path / "run", 5, run)
    (node,) = [n for n in cluster.worker_nodes if n.node_id == lost_node]
    cluster.remove_node(node)
    _, err = run.communicate(timeout=RUN_TIMEOUT)
    assert run.returncode == 0, err[-3000:]
    after = replicas()
    new_node, new_url = after["reward:tiny-reward:0"]
    assert new_node not in (lost_node, before["reward:tiny-reward:1"][0]) and new_url != lost_url  # the spare
    assert re.search(rf"endpoint {re.escape(new_url)} joins \(identity checked\)", err), err[-3000:]
    assert_same_samples(tmp_path / "run", local_run)


@pytest.mark.heavy  # a vLLM CPU replica restarted mid-run: minutes; `make test-heavy`
def test_no_room_left_ends_the_run_resumable(served, cluster, local_run, data, tmp_path):
    config, _, _ = served
    quick = ray_config(tmp_path / "quick.yaml", rate_limit=RATE, all_down_patience=5)  # the same replicas
    out = tmp_path / "run"
    run = start_run(quick, data, out)
    wait_for_lines(out, 3, run)
    for node in list(cluster.worker_nodes):  # no node left for any replica
        cluster.remove_node(node)
    _, err = run.communicate(timeout=RUN_TIMEOUT)
    assert run.returncode == 1 and "every reward endpoint stayed down for 5s" in err, err[-3000:]
    assert 3 <= len(samples(out)) < PROMPTS
    cluster.add_node(num_cpus=1)  # room for one replica again: the same command resumes
    deadline = time.monotonic() + SERVE_TIMEOUT
    while not (urls := [u for _, u in replicas().values() if u and healthy(u)]) and time.monotonic() < deadline:
        time.sleep(1)
    assert len(urls) == 1
    proc = run_cli("run", "--config", str(ray_config(tmp_path / "fast.yaml")), "--data", str(data), "--out", str(out),
                   "--no-progress")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert_same_samples(out, local_run)


def healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_stop_leaves_no_actor_and_no_server(served):
    config, groups, first_ports = served
    replicas()
    ports = first_ports | SEEN_PORTS
    assert servers_on(ports)  # the two first, the one restarted on the spare, the one resumed: one is up now
    proc = run_cli("stop", "--config", str(config))
    assert proc.returncode == 0 and "removed 2 replica(s)" in proc.stdout, proc.stdout + proc.stderr
    assert replicas() == {}
    assert not [g for g in cluster_placement_groups() if is_replica_of(g["name"], "reward", "tiny-reward")
                and g["state"] != "REMOVED"]  # fmt: skip
    deadline = time.monotonic() + 10  # a replica's server that went with its node is ended by its guard
    while any(group_alive(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [g for g in groups if group_alive(g)]
    assert not servers_on(ports)
