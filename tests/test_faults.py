"""Faults against real vLLM CPU servers: a frozen and a half-alive endpoint among two, killed endpoints, a killed
client, injected errors, bad input, secrets.

Loopback only; every run is bounded by a timeout. The tests that need a second server of the same model share one
(`second`), started once for the module: the frozen and the half-alive tests resume it, the kill test ends it (last).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from conftest import REPO, port, with_ports
from fake_reward_faults import PROBE_MARKS
from helpers_cli import (
    CLI,
    RUN_TIMEOUT,
    cli,
    one_error_line,
    sample_lines,
    scores_only,
    start_run,
    stored,
    summary,
    wait_for_lines,
    write_config,
)
from proxy import FaultProxy, Faults

from rmbench_client.launcher import ServerInfo, start_servers, stop_servers
from rmbench_client.model_kinds.reward import FINGERPRINT_PROBES

pytestmark = pytest.mark.server
GREY_PROMPTS = 120  # a run of the grey-failure tests: about 6 s on the two servers of a quiet machine


def scored_units(proxy: FaultProxy) -> int:
    """Sequences sent to be scored: the fingerprints of the start-up check and of each new connection's apart."""
    return proxy.units["/pooling"] - proxy.probe_units["/pooling"]


@pytest.fixture(scope="module")
def second(cpu_servers, tmp_path_factory) -> Iterator[ServerInfo]:
    """A second server of the tiny reward model beside the session's, for this module (the kill test ends it)."""
    extra_cfg = with_ports(cpu_servers.config, {"reward": port(11)})
    state = tmp_path_factory.mktemp("second")
    (info,) = start_servers(extra_cfg, roles=["reward"], repo_root=REPO, state_dir=state)
    try:
        yield info
    finally:
        stop_servers(state)


def engine_core(server: ServerInfo) -> int:
    """The pid of the server's engine process (vLLM's EngineCore, in the server's process group)."""
    listing = subprocess.run(["ps", "-o", "pid=,args=", "-g", str(server.pid)], capture_output=True, text=True).stdout
    (pid,) = [int(line.split()[0]) for line in listing.splitlines() if "EngineCore" in line]
    return pid


def scored_alike(out, clean_run) -> None:
    """Every prompt of the run scored once, each as the undisturbed run scored it (within float32's last bits: a
    text is scored in a request of other texts than there)."""
    lines = sample_lines(out)
    clean = {line["id"]: line for line in sample_lines(clean_run)}
    assert len(lines) == len({line["id"] for line in lines}) == GREY_PROMPTS
    for line in lines:
        for side in ("score_chosen", "score_rejected"):
            assert line[side] == pytest.approx(clean[line["id"]][side], rel=1e-5, abs=1e-5), line["id"]


def test_a_frozen_endpoint_among_two_is_routed_around_within_seconds(cpu_servers, second, fault_data, clean_run,
                                                                     tmp_path):  # fmt: skip
    """One of two servers frozen (SIGSTOP of its whole process group) mid-run, with the default settings (a read
    timeout of 120 s): its requests in flight are hedged to the other, and the run ends well within 30 s of the
    freeze, every prompt scored once as an undisturbed run scores it."""
    config = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"], second.url])
    out = tmp_path / "run"
    run = start_run(config, fault_data, out, "--limit", str(GREY_PROMPTS))
    wait_for_lines(out, 15, run)
    os.killpg(second.pid, signal.SIGSTOP)
    frozen = time.monotonic()
    try:
        _, err = run.communicate(timeout=RUN_TIMEOUT)
        after = time.monotonic() - frozen
    finally:
        os.killpg(second.pid, signal.SIGCONT)
    assert run.returncode == 0, err[-2000:]
    assert after < 30, after
    (said,) = summary(out)["taken_out"]
    assert said.startswith(f"reward {second.url} (silent for "), said
    scored_alike(out, clean_run)


def test_a_half_alive_endpoint_gets_few_requests_and_back_only_once_it_scores(cpu_servers, second, fault_data,
                                                                               clean_run, tmp_path):  # fmt: skip
    """One of two servers half-alive mid-run (its engine process stopped: /health and /v1/models answer, a scoring
    request never returns), with the default settings: after its requests in flight it gets at most 16 scoring
    requests over the run (its identity check's fingerprint, a real scoring request, never answers: it never comes
    back on /health alone); the run ends with every prompt scored once. (Its comeback once a canary succeeds:
    tests/test_grey_failures.py.)"""
    with FaultProxy(second.url) as proxy:
        config = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"], proxy.url])
        out = tmp_path / "run"
        run = start_run(config, fault_data, out, "--limit", str(GREY_PROMPTS))
        wait_for_lines(out, 15, run)
        engine = engine_core(second)
        os.kill(engine, signal.SIGSTOP)
        before = proxy.counts["/pooling"]
        try:
            _, err = run.communicate(timeout=RUN_TIMEOUT)
            assert proxy.counts["/health"] > 0  # it was probed, and /health answered
        finally:
            os.kill(engine, signal.SIGCONT)
        assert run.returncode == 0, err[-2000:]
        assert proxy.counts["/pooling"] - before <= 16, proxy.counts
        (said,) = summary(out)["taken_out"]
        assert said.startswith(f"reward {proxy.url} (silent for "), said
        scored_alike(out, clean_run)


def test_kill_one_of_two_endpoints(cpu_servers, second, fault_data, clean_summary, tmp_path):
    config = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"], second.url])
    run = start_run(config, fault_data, tmp_path / "run")
    wait_for_lines(tmp_path / "run", 143, run)
    os.killpg(second.pid, signal.SIGKILL)  # the module's second server ends here: no test after this one needs it
    _, err = run.communicate(timeout=RUN_TIMEOUT)
    assert run.returncode == 0, err[-2000:]
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


def test_no_credential_of_a_url_is_ever_written(cpu_servers, fault_data, tmp_path):
    """A password in an endpoint's URL (sent as Basic auth: the run uses it) and in a second one's, down: found in
    no byte of the run directory, its report page, and the stdout and stderr of `run -vv`, `report` and `status`
    (neither as written nor as its Basic header). The run directory's files are made with the user's umask (077:
    nothing for group or others, the store included)."""
    password = "pw-" + "9c41e7d2b85f3a06"
    basic = base64.b64encode(f"alice:{password}".encode()).decode()
    out = tmp_path / "run"

    def private(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                              preexec_fn=lambda: os.umask(0o077))  # fmt: skip

    with FaultProxy(cpu_servers.urls["reward"]) as proxy:
        good = proxy.url.replace("http://", f"http://alice:{password}@")
        config = write_config(tmp_path / "c.yaml", [good, f"http://bob:{password}@127.0.0.1:9"])
        run = private(
            "-vv", "run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--limit", "3"
        )
    assert run.returncode == 0, run.stderr[-2000:]
    assert proxy.auth_headers and all(h == f"Basic {basic}" for h in proxy.auth_headers)
    assert "http://<secret>@127.0.0.1:9" in run.stderr  # said, masked: the endpoint down at start
    for proc in (run, private("report", str(out)), private("status", str(out))):
        for secret in (password, basic):
            assert secret not in proc.stdout + proc.stderr
    assert f"http://<secret>@127.0.0.1:{proxy.port}" in (out / "config.yaml").read_text()
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"scores.sqlite", "samples.jsonl", "summary.json", "config.yaml", "report.html"}
    for path in files:
        for secret in (password, basic):
            assert secret.encode() not in path.read_bytes(), path
        assert path.stat().st_mode & 0o077 == 0, (path, oct(path.stat().st_mode))
