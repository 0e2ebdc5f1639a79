"""Shared fixtures."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers_cli import cli, summary, write_config
from helpers_data import require_rmbench

from rmbench_client.config.loading import load_config
from rmbench_client.config.schema import RunConfig
from rmbench_client.launcher import ServerInfo, start_servers, stop_servers

# ================================================================================================================
# Servers: real vLLM CPU servers on tiny local models (servers/). Never mocks.
# ================================================================================================================

REPO = Path(__file__).resolve().parents[1]
SERVER_PYTHON = REPO / ".venv-server" / "bin" / "python"
TINY_MODELS = REPO / "models" / "tiny"
CPU_DEMO_CONFIG = REPO / "configs" / "cpu-demo.yaml"
# Not the demo's 8701-8703, so the tests never collide with a `make serve` left running; RMBENCH_TEST_PORT_BASE
# moves every test port (base + offset), so that two checkouts can run their tests at once; each of pytest-xdist's
# workers (`make test` runs two) has its own thousand ports above the base.
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
PORT_BASE = int(os.environ.get("RMBENCH_TEST_PORT_BASE", "18700")) + 1000 * WORKER


def port(offset: int) -> int:
    """A loopback port for the tests: PORT_BASE + offset."""
    return PORT_BASE + offset


TEST_PORTS = {"reward": port(1), "policy": port(2), "reference": port(3)}


def with_ports(cfg: RunConfig, ports: dict[str, int]) -> RunConfig:
    """The config with only the roles in `ports`, each served on 127.0.0.1:<port>."""
    roles = {
        role: rc.replace(endpoints=[f"http://127.0.0.1:{ports[role]}"])
        for role, rc in cfg.roles.items()
        if role in ports
    }
    return cfg.replace(roles=roles)


@contextlib.contextmanager
def building() -> Iterator[None]:
    """Held while the server environment or a model under models/ is made: the workers of one test run (and two
    runs in one checkout) take turns, so none reads a half-built model or installs into a half-made environment."""
    with open(Path(tempfile.gettempdir()) / f"rmbench-tests-build-{REPO.stat().st_ino}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_server_side() -> None:
    """Create .venv-server and build the tiny models; both are quick no-ops once done."""
    build = [str(SERVER_PYTHON), str(REPO / "servers" / "build_models.py"), "--size", "tiny", "--out", str(TINY_MODELS)]
    with building():
        subprocess.run(["bash", str(REPO / "servers" / "setup-cpu-venv.sh")], check=True)
        subprocess.run(build, check=True)


# The modules that start a Ray cluster: one worker runs them, one after the other, so one cluster runs at a time.
RAY_CLUSTER_MODULES = {"tests/test_ray.py", "tests/test_ray_replicas.py"}


@functools.cache
def uses_session_servers(module: str) -> bool:
    """Whether a test module uses the session's vLLM servers (`cpu_servers`, below): its source names them."""
    return "cpu_servers" in (REPO / module).read_text(encoding="utf-8")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With pytest-xdist (`make test`: `-n 2`), each module runs whole in one worker, in order (its servers are
    module fixtures); the Ray modules in the same worker; and every module using the session's servers in one
    worker too, so that they (and `clean_summary`'s run) are started once, not once per worker."""
    from xdist.scheduler import LoadFileScheduling

    class ByModule(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if module in RAY_CLUSTER_MODULES:
                return "ray clusters"
            return "session servers" if uses_session_servers(module) else module

    return ByModule(config, log)


@dataclass(frozen=True)
class CpuServers:
    config: RunConfig  # configs/cpu-demo.yaml on the test ports
    urls: dict[str, str]  # role -> base URL
    models_dir: Path  # models/tiny: reward/, policy/, reference/
    state_dir: Path
    servers: list[ServerInfo]


@pytest.fixture(scope="session")
def cpu_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CpuServers]:
    """The three servers of configs/cpu-demo.yaml (reward, policy, reference), started once per session."""
    ensure_server_side()
    cfg = with_ports(load_config(CPU_DEMO_CONFIG), TEST_PORTS)
    state_dir = tmp_path_factory.mktemp("servers")  # its own state: `make stop` never touches test servers
    servers = start_servers(cfg, repo_root=REPO, state_dir=state_dir)
    try:
        urls = {s.role: s.url for s in servers}
        yield CpuServers(config=cfg, urls=urls, models_dir=TINY_MODELS, state_dir=state_dir, servers=servers)
    finally:
        stop_servers(state_dir)


ReferenceScores = Callable[..., list[Any]]  # (model_dir, kind, inputs, **extra): see servers/reference_scores.py


@pytest.fixture(scope="session")
def reference_scores() -> ReferenceScores:
    """transformers in-process (servers/reference_scores.py in .venv-server): kind "reward", "logprobs", "prm" or
    "step_logprobs"."""
    ensure_server_side()

    def run(model_dir: Path | str, kind: str, inputs: list[Any], **extra: Any) -> list[Any]:
        request = json.dumps({"model_dir": str(model_dir), "kind": kind, "inputs": inputs, **extra})
        script = str(REPO / "servers" / "reference_scores.py")
        proc = subprocess.run(
            [str(SERVER_PYTHON), script], input=request, capture_output=True, text=True, timeout=300, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"reference_scores.py failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        result: list[Any] = json.loads(proc.stdout)
        return result

    return run


def transformers_reference(
    models_dir: Path, pairs: list[list[Any]], dirs: dict[str, str] | None = None
) -> dict[str, Any]:
    """Rewards and response-token log-probs of (prompt, response) pairs computed in-process by transformers
    (tests/transformers_reference.py in .venv-server), from the models' own chat template. Each role's model is
    models_dir/<role>, or models_dir/<dirs[role]>."""
    request = {
        f"{role}_dir": str(models_dir / (dirs or {}).get(role, role)) for role in ("reward", "policy", "reference")
    }
    proc = subprocess.run(
        [str(SERVER_PYTHON), str(REPO / "tests" / "transformers_reference.py")],
        input=json.dumps({**request, "pairs": pairs}),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return dict(json.loads(proc.stdout))


def transformers_render(request: dict[str, Any]) -> list[str]:
    """Conversations rendered by transformers itself (tests/transformers_render.py in .venv-server): a tokenizer's
    `apply_chat_template`, or `render_jinja_template` on a template and its special tokens."""
    proc = subprocess.run(
        [str(SERVER_PYTHON), str(REPO / "tests" / "transformers_render.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"transformers_render.py failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return list(json.loads(proc.stdout))


FAULT_FILES = ("chat_filtered.json", "safety-response_filtered.json")


@pytest.fixture(scope="session")
def fault_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real RM-Bench files (chat, safety-response): 286 prompts, 1716 sequences."""
    src = require_rmbench()
    out = tmp_path_factory.mktemp("faultdata")
    for name in FAULT_FILES:
        (out / name).symlink_to(src / name)
    return out


@pytest.fixture(scope="session")
def clean_run(cpu_servers: CpuServers, fault_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of an undisturbed run: what every disturbed run must end with."""
    tmp = tmp_path_factory.mktemp("clean")
    config = write_config(tmp / "c.yaml", [cpu_servers.urls["reward"]])
    proc = cli("run", "--config", str(config), "--data", str(fault_data), "--out", str(tmp / "run"), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = summary(tmp / "run")
    assert s["scored"] == 286 and s["failed"] == 0
    return tmp / "run"


@pytest.fixture(scope="session")
def clean_summary(clean_run: Path) -> dict:
    """The summary of an undisturbed run."""
    return summary(clean_run)
