"""What one read of a role's replicas costs a run on a large Ray cluster (docs/performance.md, "Discovery at scale").

A simulated state API (tests/fake_ray_dashboard.py, in a process of its own, answering as Ray 2.60's dashboard
does: the data source's cut, then the request's filters applied by the API server) holds 1,000 or 10,000 actors, of
which 8 are the role's replicas:

- filtered: the other actors live in other namespaces, so the cluster's namespace and state filters leave 8 rows
  in the answer (what `endpoints: ray` asks);
- one namespace: every actor is in the namespace `rmbench` (other roles' replicas), so the answer holds all of
  them and the client picks the role's 8.

Each read is `RayEndpoints.urls()` as the pool makes it (a new connection, the answer checked whole and decoded);
the wall time per read (the simulated API's own work included: a Python filter over every row, slower than Ray's)
and the client's own CPU per read (this process's CPU time: the simulated API runs in another) are medians over
READS reads in one event loop after two warm-up reads. Results: bench/results-ray-discovery.json.

    .venv/bin/python bench/ray_discovery_scale.py        # BENCH_QUICK=1: fewer reads
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rmbench_client.cluster.discovery import RayEndpoints
from rmbench_client.config.schema import RunConfig

ROOT = Path(__file__).resolve().parents[1]
READS = 5 if os.environ.get("BENCH_QUICK") else 30
REPLICAS = 8
SIZES = (1_000, 10_000)
OUT = ROOT / "bench" / "results-ray-discovery.json"


def source_for(dashboard: str) -> RayEndpoints:
    serve = {"engine": "vllm-cpu", "path": "m", "cluster": "ray", "ray_dashboard": dashboard}
    role = {"served_model": "tiny-reward", "endpoints": "ray", "serve": serve}
    return RayEndpoints(
        "reward", RunConfig.from_data({"model": "tiny-reward", "roles": {"reward": role}}).roles["reward"]
    )


async def reads(source: RayEndpoints) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of READS reads in one event loop, as a running pool makes them, after two warm-up reads."""
    walls, cpus = [], []
    for i in range(READS + 2):
        wall, cpu = time.perf_counter(), time.process_time()
        urls = await source.urls()
        if i >= 2:
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        assert len(urls) == REPLICAS, urls
    return walls, cpus


def measure(actors: int, same_namespace: bool) -> dict[str, Any]:
    args = [sys.executable, str(ROOT / "tests" / "fake_ray_dashboard.py"), str(actors), str(REPLICAS)]
    server = subprocess.Popen([*args, *(["same-namespace"] if same_namespace else [])], stdout=subprocess.PIPE,
                              text=True, cwd=ROOT / "tests")  # fmt: skip
    try:
        assert server.stdout is not None
        source = source_for(server.stdout.readline().strip())
        walls, cpus = asyncio.run(reads(source))
        return {"actors": actors, "rows_in_answer": actors if same_namespace else REPLICAS,
                "wall_ms": 1e3 * statistics.median(walls), "client_cpu_ms": 1e3 * statistics.median(cpus),
                "reads": len(walls)}  # fmt: skip
    finally:
        server.kill()
        server.wait()


def main() -> None:
    result: dict[str, Any] = {"load_1min_at_start": os.getloadavg()[0], "replicas": REPLICAS, "cases": []}
    for actors in SIZES:
        for same in (False, True):
            case = measure(actors, same)
            result["cases"].append({"case": "one namespace" if same else "filtered", **case})
            print(
                f"{actors:>6} actors, {'one namespace' if same else 'filtered':<13}: {case['wall_ms']:7.1f} ms a "
                f"read, client CPU {case['client_cpu_ms']:6.1f} ms ({case['rows_in_answer']} rows)",
                flush=True,
            )
    result["load_1min_at_end"] = os.getloadavg()[0]
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written {OUT}")


if __name__ == "__main__":
    main()
