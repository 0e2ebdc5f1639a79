"""Faults against real vLLM CPU servers: killed endpoints, a killed client, injected errors, bad input, secrets.

Loopback only; every run is bounded by a timeout.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from conftest import REPO, port, with_ports
from fake_reward_faults import PROBE_MARKS
from helpers_cli import (
    RUN_TIMEOUT,
    cli,
    one_error_line,
    scores_only,
    start_run,
    stored,
    summary,
    wait_for_lines,
    write_config,
)
from proxy import FaultProxy, Faults

from rmbench_client.launcher import start_servers, stop_servers
from rmbench_client.model_kinds.reward import FINGERPRINT_PROBES

pytestmark = pytest.mark.server


def scored_units(proxy: FaultProxy) -> int:
    """Sequences sent to be scored: the fingerprints of the start-up check and of each new connection's apart."""
    return proxy.units["/pooling"] - proxy.probe_units["/pooling"]


def test_kill_one_of_two_endpoints(cpu_servers, fault_data, clean_summary, tmp_path):
    extra_cfg = with_ports(cpu_servers.config, {"reward": port(11)})
    state = tmp_path / "state"
    (second,) = start_servers(extra_cfg, roles=["reward"], repo_root=REPO, state_dir=state)
    try:
        config = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"], second.url])
        run = start_run(config, fault_data, tmp_path / "run")
        wait_for_lines(tmp_path / "run", 143, run)
        os.killpg(second.pid, signal.SIGKILL)
        _, err = run.communicate(timeout=RUN_TIMEOUT)
        assert run.returncode == 0, err[-2000:]
    finally:
        stop_servers(state)
    assert scores_only(summary(tmp_path / "run")) == scores_only(clean_summary)


def test_kill_client_and_resume(cpu_servers, fault_data, clean_summary, tmp_path):
    with FaultProxy(cpu_servers.urls["reward"]) as proxy:
        config = write_config(tmp_path / "c.yaml", [proxy.url])
        out = tmp_path / "run"
        run = start_run(config, fault_data, out)
        wait_for_lines(out, 143, run)
        run.send_signal(signal.SIGKILL)
        run.communicate(timeout=30)  # reaps it and closes its pipes
        kept = stored(out)
        assert 0 < kept < 1716
        before = scored_units(proxy)
        proc = cli("run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--no-progress")
        assert proc.returncode == 0, proc.stderr[-2000:]
        resent = scored_units(proxy) - before
        assert proxy.probe_units["/pooling"] >= len(FINGERPRINT_PROBES)  # the start-up fingerprint of the model
    # only what was missing went out again, once each (the identity checks' fingerprints apart)
    assert resent == stored(out) - kept
    assert scores_only(summary(out)) == scores_only(clean_summary)


def test_injected_faults_lose_nothing(cpu_servers, fault_data, clean_summary, tmp_path):
    """503s, resets and hangs past the read timeout: every answer that arrived is kept, and a rerun completes the
    result sending only what is missing. What a prompt's retries can ride out depends on the machine (a loaded one
    may answer a shared request of 32 texts slower than the 8 s read timeout too), so the first run may end with
    failed prompts: the promise tested is that nothing is lost and nothing is sent twice, not the machine's speed.
    (A 1.5 s timeout made nearly every shared request time out on a loaded machine: minutes of retries.)"""
    out = tmp_path / "run"
    faults = Faults(error_503=0.10, reset=0.05, hang=0.05, hang_seconds=10.0)  # seed 1: a hang by the 9th request
    with FaultProxy(cpu_servers.urls["reward"], faults=faults, seed=1) as proxy:
        config = write_config(tmp_path / "c.yaml", [proxy.url], client={"read_timeout": 8})
        first = cli("run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--no-progress")
    assert first.returncode in (0, 1) and "Traceback" not in first.stderr, first.stderr[-2000:]
    assert proxy.injected["503"] > 0 and proxy.injected["reset"] > 0 and proxy.injected["hang"] > 0
    s = summary(out)
    assert s["scored"] + s["failed"] == s["prompts"] and "aborted" not in s  # every prompt tried: none lost
    assert len((out / "samples.jsonl").read_text().splitlines()) == s["scored"]
    kept = stored(out)

    with FaultProxy(cpu_servers.urls["reward"]) as proxy:
        config = write_config(tmp_path / "c.yaml", [proxy.url])
        proc = cli("run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # what the first run stored went out no more (the identity checks' fingerprints apart)
    assert scored_units(proxy) == stored(out) - kept
    assert scores_only(summary(out)) == scores_only(clean_summary)


def test_bad_config_inputs(fault_data, tmp_path):
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("model: x\nroles: [unclosed\n")
    one_error_line(cli("run", "--config", str(bad_yaml)), 2, str(bad_yaml), "YAML")
    unknown = write_config(tmp_path / "unknown.yaml", ["http://127.0.0.1:1"], colour="blue")
    one_error_line(cli("run", "--config", str(unknown)), 2, "colour", "unknown key")
    missing = tmp_path / "nope.yaml"
    one_error_line(cli("run", "--config", str(missing)), 2, str(missing))


def test_bad_endpoint_inputs(cpu_servers, fault_data, tmp_path):
    wrong = write_config(tmp_path / "w.yaml", [cpu_servers.urls["reward"]])
    wrong.write_text(wrong.read_text().replace("served_model: tiny-reward", "served_model: no-such-model"))
    one_error_line(
        cli("run", "--config", str(wrong), "--data", str(fault_data), "--out", str(tmp_path / "w")), 2, "no-such-model"
    )
    down = write_config(tmp_path / "d.yaml", ["http://127.0.0.1:9"])
    one_error_line(
        cli("run", "--config", str(down), "--data", str(fault_data), "--out", str(tmp_path / "d")),
        1,
        "http://127.0.0.1:9",
    )


def test_nan_from_server_loses_nothing_scored(cpu_servers, fault_data, tmp_path):
    out = tmp_path / "run"
    config = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"]])
    first = cli("run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--limit", "5")
    assert first.returncode == 0, first.stderr
    kept = stored(out)

    def nan(path: str, request: bytes, body: bytes) -> bytes:
        # identity checks' fingerprints (at start, on each new connection) stay real: the model is sound
        if path != "/pooling" or any(mark.encode() in request for mark in PROBE_MARKS):
            return body
        data = json.loads(body)
        data["data"][0]["data"] = [float("nan")]
        return json.dumps(data).encode()

    with FaultProxy(cpu_servers.urls["reward"], rewrite=nan) as proxy:
        config = write_config(tmp_path / "p.yaml", [proxy.url])
        proc = cli("run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--limit", "8")
    assert proc.returncode == 1
    assert "non-finite" in proc.stderr and "Traceback" not in proc.stderr
    s = summary(out)
    assert s["scored"] == 5 and s["failed"] == 3 and stored(out) == kept
    assert len((out / "samples.jsonl").read_text().splitlines()) == 5
    failures = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert len(failures) == 3 and all("non-finite" in f["reason"] for f in failures)


def test_api_key_never_written(cpu_servers, fault_data, tmp_path):
    secret = "sk-test-" + "7f3a9c2e51d04b8e"
    env = {**os.environ, "RMBENCH_API_KEY": secret}
    with FaultProxy(cpu_servers.urls["reward"]) as proxy:
        config = write_config(tmp_path / "c.yaml", [proxy.url])
        out = tmp_path / "run"
        proc = cli(
            "-vv", "run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--limit", "3", env=env
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proxy.auth_headers and all(h == f"Bearer {secret}" for h in proxy.auth_headers)
    assert secret not in proc.stdout + proc.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
