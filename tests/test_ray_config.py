"""Serving on Ray without a cluster: the config's keys and their errors, fitting replicas onto nodes, and reading
(tests/test_ray_state_api.py reads the state API's answers). Ray itself is never imported here; tests/test_ray.py
runs the real cluster."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers_cli import cli, one_error_line

from rmbench_client.cluster.discovery import dashboard_url
from rmbench_client.cluster.placement import capacity_error, fits
from rmbench_client.config.loading import load_config
from rmbench_client.errors import ConfigError

SERVE = {"engine": "vllm-cpu", "path": "models/tiny/reward"}
GPU_SERVE = {"engine": "vllm", "path": "m", "cluster": "ray", "resources": {"GPU": 2}}


def config(tmp_path: Path, endpoints, serve=None) -> Path:
    role = {"served_model": "tiny-reward", "endpoints": endpoints, **({"serve": serve} if serve else {})}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"model": "tiny-reward", "roles": {"reward": role}}))
    return path


@pytest.mark.parametrize(
    ("endpoints", "serve", "words"),
    [
        (["http://127.0.0.1:1"], {**SERVE, "replicas": 2}, ["roles.reward.serve", "replicas need cluster: ray"]),
        (["http://127.0.0.1:1"], {**SERVE, "resources": {"GPU": 1}}, ["resources need cluster: ray"]),
        (["http://127.0.0.1:1"], {**SERVE, "cluster": "ray"}, ["roles.reward", "set endpoints: ray"]),
        ("ray", SERVE, ["endpoints: ray needs serve.cluster: ray"]),
        ("ray", {**SERVE, "cluster": "ray", "resources": {"GPU": 0}}, ["serve.resources", "> 0"]),
        ("ray", {**SERVE, "cluster": "ray", "resources": {}}, ["resources is empty"]),
        ("ray", {**SERVE, "cluster": "ray", "gpus": ["0"]}, ["reserves them in resources"]),
        ("ray", {**SERVE, "cluster": "ray", "engine": "tgi"}, ["engine tgi"]),
        ("ray", {**SERVE, "cluster": "ray", "replicas": 0}, ["serve.replicas", ">= 1"]),
        ("http://127.0.0.1:1", None, ["roles.reward.endpoints", "a list of URLs, or ray", "http://127.0.0.1:1"]),
        ("ray", {**SERVE, "cluster": "ray", "resources": {"GPU": 1}}, ["vllm-cpu uses no GPU"]),
        ("ray", {**GPU_SERVE, "resources": {"CPU": 4}}, ["engine vllm needs GPUs: add GPU: 1"]),
        ("ray", {**GPU_SERVE, "extra_args": ["-tp", "4"]}, ["GPU: 2 per replica", "parallel size is 4", "exactly 4"]),
        (
            "ray",
            {**GPU_SERVE, "extra_args": ["--tensor-parallel-size=2", "--pipeline-parallel-size", "2"]},
            ["GPU: 2 per replica", "parallel size is 4"],
        ),  # fmt: skip
        (
            "ray",
            {**GPU_SERVE, "resources": {"GPU": 4}, "data_parallel_size": 2, "extra_args": ["-tp", "4"]},
            ["parallel size is 8"],
        ),  # fmt: skip
        ("ray", {**GPU_SERVE, "extra_args": ["-tp", "two"]}, ["-tp needs a whole number", "'two'"]),
    ],
)
def test_bad_ray_keys_are_one_clear_error(tmp_path, endpoints, serve, words):
    with pytest.raises(ConfigError) as err:
        load_config(config(tmp_path, endpoints, serve))
    for word in words:
        assert word in str(err.value), str(err.value)


def test_ray_keys_read(tmp_path):
    serve = {**GPU_SERVE, "replicas": 3, "resources": {"GPU": 4, "a100": 1}, "ray_address": "h:6379",
             "extra_args": ["--tensor-parallel-size", "2", "-pp=2"]}  # fmt: skip
    role = load_config(config(tmp_path, "ray", serve)).roles["reward"]
    assert role.on_ray and role.urls() == [] and role.endpoint_count() == 3
    assert role.serve is not None and role.serve.replica_resources() == {"GPU": 4.0, "a100": 1.0}
    plain = load_config(config(tmp_path, "ray", {**SERVE, "cluster": "ray"})).roles["reward"]
    assert plain.serve is not None and plain.serve.replica_resources() == {"CPU": 1.0}  # constants' default


def test_dashboard_address(tmp_path, monkeypatch):
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    role = load_config(config(tmp_path, "ray")).roles["reward"]
    with pytest.raises(ConfigError, match="RAY_ADDRESS"):
        dashboard_url(role.serve, "reward")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.5:6379")
    assert dashboard_url(None, "reward") == "http://127.0.0.5:8265"  # Ray's default dashboard port on the head
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    assert dashboard_url(None, "reward") == "http://127.0.0.1:8265"
    monkeypatch.setenv("RAY_API_SERVER_ADDRESS", "http://head:9000/")
    assert dashboard_url(None, "reward") == "http://head:9000"
    spec = load_config(config(tmp_path, "ray", {**SERVE, "cluster": "ray", "ray_dashboard": "http://d:1"})).roles
    assert dashboard_url(spec["reward"].serve, "reward") == "http://d:1"


def test_run_without_a_cluster_address_is_one_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")}
    data = tmp_path / "p.jsonl"
    data.write_text(json.dumps({"prompt": "q", "chosen": "a", "rejected": "b"}) + "\n")
    args = ["--benchmark", "pairwise", "--data", str(data), "--out", str(tmp_path / "run")]
    proc = cli("run", "--config", str(config(tmp_path, "ray")), *args, env=env)
    one_error_line(proc, 2, "role reward", "RAY_ADDRESS")
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_ray_is_imported_only_when_used():
    modules = "rmbench_client.cli, rmbench_client.model_kinds.factory, rmbench_client.cluster.placement"
    code = f"import sys, {modules}, rmbench_client.cluster.discovery; assert 'ray' not in sys.modules, 'ray imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_replicas_fit_onto_nodes():
    free = {"a": {"CPU": 8.0, "GPU": 4.0}, "b": {"CPU": 8.0, "GPU": 2.0}}
    assert fits([("reward", {"GPU": 4.0})], free)
    assert not fits([("reward", {"GPU": 4.0})] * 2, free)  # 6 GPUs free in all, but 4 on no second node
    assert fits([("reward", {"GPU": 2.0, "CPU": 4.0})] * 3, free)
    assert not fits([("policy", {"a100": 1.0})], free)
    message = str(capacity_error([("reward", {"GPU": 4.0})] * 2, free))
    assert "role reward: 2 replica(s) of {GPU: 4}" in message
    assert "node a {CPU: 8, GPU: 4}; node b {CPU: 8, GPU: 2}" in message


def test_no_cluster_at_the_address_is_one_error_at_once(tmp_path):
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    serve = {**SERVE, "cluster": "ray", "ray_address": f"127.0.0.1:{port}", "ray_dashboard": f"http://127.0.0.1:{port}"}
    path = config(tmp_path, "ray", serve)
    for command in (["serve"], ["stop"]):
        proc = cli(*command, "--config", str(path), timeout=60, cwd=tmp_path)  # stop: no local server of a checkout
        one_error_line(proc, 1, f"cannot connect to the Ray cluster at 127.0.0.1:{port}", "refused")
    one_error_line(cli("status", "--config", str(path), timeout=60), 1, "Ray state API", "not reachable")


def test_the_cluster_recipes_are_secure():
    """The KubeRay manifests turn token authentication on and open no dashboard; the RayJob tears down whatever
    happens; no command in docs/ray.md exposes a dashboard."""
    docs = Path(__file__).resolve().parents[1] / "docs"
    for name in ("kuberay-raycluster.yaml", "kuberay-rayjob.yaml"):
        manifest = yaml.safe_load((docs / name).read_text())
        cluster = manifest["spec"].get("rayClusterSpec", manifest["spec"])
        assert cluster["authOptions"] == {"mode": "token"}, name
        assert "dashboard-host" not in cluster["headGroupSpec"]["rayStartParams"], name
    job = yaml.safe_load((docs / "kuberay-rayjob.yaml").read_text())["spec"]
    assert job["shutdownAfterJobFinishes"] is True
    assert 'trap "rmbench-client stop' in job["entrypoint"] and "--idle-timeout" in job["entrypoint"]
    blocks = (docs / "ray.md").read_text().split("```")[1::2]  # the code blocks
    assert blocks and not [b for b in blocks if "dashboard-host" in b]
    assert "RAY_AUTH_MODE=token" in "".join(blocks)
