"""The Python API against a real vLLM CPU server (the session's tiny reward model): a run equals the CLI's for the
same config, and a second call resumes from the store (nothing sent); `serve` stops what it started when its block
fails."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import REPO, TINY_MODELS, CpuServers, port
from helpers_cli import cli
from helpers_data import require_rmbench
from helpers_ray import group_alive

import rmbench_client as rmb

pytestmark = pytest.mark.server


def test_evaluate_equals_the_cli_and_resumes(cpu_servers: CpuServers, tmp_path: Path) -> None:
    data = require_rmbench()
    data_cfg = cpu_servers.config.to_data(exclude_none=True) | {"limit": 4, "data": str(data)}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data_cfg))
    result = rmb.evaluate(config, out=tmp_path / "api")
    proc = cli("run", "--config", str(config), "--out", str(tmp_path / "cli"), "--json", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    by_cli = json.loads(proc.stdout)
    for key in ("domains", "overall", "style_bias", "identity", "prompts", "scored", "complete"):
        assert result.summary[key] == by_cli[key], key
    assert result.sent > 0 and result.all_scored
    assert result.headline.value == by_cli["overall"]["avg"]
    again = rmb.evaluate(config, out=tmp_path / "api")  # the store holds every score: nothing is sent
    assert again.sent == 0 and again.summary["overall"] == result.summary["overall"]
    more = rmb.evaluate(config, out=tmp_path / "api", limit=6)  # only the two new prompts go out
    assert 0 < more.sent < result.sent and more.scored == 6


def test_serve_stops_its_servers_when_the_block_fails(tmp_path: Path) -> None:
    """A block that raises: the server `serve` started (healthy inside) is gone after it, its port free again."""
    url = f"http://127.0.0.1:{port(42)}"
    spec = {"engine": "vllm-cpu", "path": str(TINY_MODELS / "reward"), "dtype": "float32", "max_model_len": 4096}
    cfg = rmb.load_config({"model": "tiny-reward", "roles": {"reward": {"served_model": "tiny-reward",
                           "endpoints": [url], "serve": spec}}})  # fmt: skip
    pids: tuple[int, ...] = ()
    with pytest.raises(RuntimeError, match="training failed"), rmb.serve(cfg, repo_root=REPO) as servers:
        pids = servers.pids["reward"]
        assert servers.urls == {"reward": (url,)}
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        raise RuntimeError("training failed")
    assert pids and not any(Path(f"/proc/{pid}").exists() for pid in pids)
    with socket.socket() as s:
        s.bind(("127.0.0.1", port(42)))  # free again
    with pytest.raises(rmb.ServerError):  # a model path that does not exist: nothing starts
        bad = cfg.to_data() | {"roles": {"reward": cfg.roles["reward"].to_data() | {"serve": spec | {"path": "/nope"}}}}
        with rmb.serve(rmb.load_config(bad), repo_root=REPO):
            pass


def test_a_caller_killed_inside_the_block_takes_its_servers_with_it(tmp_path: Path) -> None:
    """A training script ended on the spot inside `serve`'s block (SIGTERM under the system's default, as an
    unhandled Slurm preemption): the server it started, and the server's own processes, end too; the port is free."""
    url = f"http://127.0.0.1:{port(45)}"
    spec = {"engine": "vllm-cpu", "path": str(TINY_MODELS / "reward"), "dtype": "float32", "max_model_len": 4096}
    config = {"model": "tiny-reward", "roles": {"reward": {"served_model": "tiny-reward", "endpoints": [url],
              "serve": spec}}}  # fmt: skip
    script = tmp_path / "train.py"
    script.write_text(
        "import json, sys, time\nimport rmbench_client as rmb\n"
        f"with rmb.serve(json.loads(sys.argv[1]), repo_root={str(REPO)!r}) as servers:\n"
        "    print(*servers.pids['reward'], flush=True)\n"
        "    time.sleep(600)\n"
    )
    leader = 0
    with subprocess.Popen(
        [sys.executable, str(script), json.dumps(config)], stdout=subprocess.PIPE, text=True
    ) as caller:
        try:
            assert caller.stdout is not None
            (leader,) = map(int, caller.stdout.readline().split())  # healthy: serve returned it
            group = group_alive(leader)
            assert len(group) >= 2, group  # the server and its engine process
            caller.send_signal(signal.SIGTERM)
            assert caller.wait(10) == -signal.SIGTERM  # the default handler: no cleanup ran in the caller
            deadline = time.monotonic() + 60
            while group_alive(leader) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not group_alive(leader), f"left running: {group_alive(leader)}"
            with socket.socket() as s:
                s.bind(("127.0.0.1", port(45)))  # free again
        finally:
            caller.kill()
            caller.wait()
            if leader and group_alive(leader):  # failed: the rest of the suite must not meet it
                os.killpg(leader, signal.SIGKILL)
