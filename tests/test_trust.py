"""Trust, against real vLLM CPU servers: every run ends (an outage, SIGINT, SIGTERM), nothing scored is lost and
nothing stale is reused (a new checkpoint under the same name and path), load is not ill health (429 bursts on a
judge without /health), a -inf log-prob is a sample's failure, and one run at a time per directory."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SERVER_PYTHON, TINY_MODELS, CpuServers, port, with_ports
from helpers_cli import RUN_TIMEOUT, cli, scores_only, start_run, stored, summary, wait_for_lines, write_config
from helpers_data import require_rmbench
from proxy import FaultProxy, Faults

from rmbench_client.config.schema import RunConfig
from rmbench_client.launcher import start_servers, stop_servers

pytestmark = pytest.mark.server


def test_every_endpoint_killed_mid_run_ends_within_patience_and_resumes(
    cpu_servers: CpuServers, fault_data: Path, clean_summary: dict, tmp_path: Path
) -> None:
    own = with_ports(cpu_servers.config, {"reward": port(51)})
    state = tmp_path / "state"
    (server,) = start_servers(own, roles=["reward"], repo_root=REPO, state_dir=state)
    out = tmp_path / "run"
    config = write_config(tmp_path / "c.yaml", [server.url], client={"all_down_patience": 10})
    try:
        run = start_run(config, fault_data, out)
        wait_for_lines(out, 60, run)
        os.killpg(server.pid, signal.SIGKILL)
        killed = time.monotonic()
        _, err = run.communicate(timeout=RUN_TIMEOUT)
        elapsed = time.monotonic() - killed
    finally:
        stop_servers(state)
    assert run.returncode == 1 and elapsed <= 10 + 10, (run.returncode, elapsed, err[-2000:])
    (line,) = [x for x in err.splitlines() if x.startswith("error: ")]
    assert "every reward endpoint stayed down for 10s" in line and server.url in line and "Traceback" not in err
    s = summary(out)
    assert s["complete"] is False and "stayed down" in s["aborted"] and s["scored"] >= 60
    assert stored(out) >= 60 * 5  # six sequences a prompt, a few repeated within their prompt
    samples = (out / "samples.jsonl").read_text().splitlines()
    assert len(samples) == s["scored"]  # everything scored is in the outputs too

    back = write_config(tmp_path / "back.yaml", [cpu_servers.urls["reward"]])  # the same model, served again
    proc = cli("run", "--config", str(back), "--data", str(fault_data), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    resumed = summary(out)
    assert "aborted" not in resumed and resumed["partial"] == ["no data for domain(s) math, code"]
    assert scores_only(resumed) == scores_only(clean_summary)


def test_a_second_run_on_the_same_directory_is_refused_and_sigint_stops_the_first(
    cpu_servers: CpuServers, fault_data: Path, clean_summary: dict, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    config = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"]])
    first = start_run(config, fault_data, out)
    wait_for_lines(out, 30, first)
    second = cli("run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--no-progress")
    assert second.returncode == 2 and "Traceback" not in second.stderr
    (line,) = second.stderr.strip().splitlines()
    assert line.startswith("error: ") and f"another run (pid {first.pid})" in line and str(out) in line

    first.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = first.communicate(timeout=60)
    assert time.monotonic() - sent <= 5 and first.returncode == 130, err[-2000:]
    s = summary(out)
    assert s["complete"] is False and s["aborted"] == "interrupted by SIGINT" and s["scored"] >= 30
    assert "Traceback" not in err

    proc = cli("run", "--config", str(config), "--data", str(fault_data), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert scores_only(summary(out)) == scores_only(clean_summary)


def test_sigterm_stops_a_run_that_then_resumes(cpu_servers: CpuServers, fault_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"]])
    run = start_run(config, fault_data, out, "--limit", "80")
    wait_for_lines(out, 20, run)
    run.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    run.communicate(timeout=60)
    assert time.monotonic() - sent <= 5 and run.returncode == 143
    s = summary(out)
    assert s["aborted"] == "interrupted by SIGTERM" and 20 <= s["scored"] < 80
    kept = stored(out)
    args = ("--config", str(config), "--data", str(fault_data), "--out", str(out), "--limit", "80", "--json")
    proc = cli("run", *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    done = json.loads(proc.stdout)
    assert done["scored"] == 80 and "aborted" not in done and stored(out) > kept
    assert done["complete"] is False and done["partial"][-1] == "--limit 80: 80 of 286 prompts"


def negate_reward_head(model_dir: Path) -> None:
    """The same model files with the reward head's sign flipped: another checkpoint, same name and path."""
    script = (
        "import sys, safetensors.torch as st\n"
        "path = sys.argv[1] + '/model.safetensors'\n"
        "weights = st.load_file(path)\n"
        "key = next(k for k in weights if k.startswith('score.'))\n"
        "weights[key] = -weights[key]\n"
        "st.save_file(weights, path, metadata={'format': 'pt'})\n"
    )
    subprocess.run([str(SERVER_PYTHON), "-c", script, str(model_dir)], check=True, timeout=120)


def test_a_new_checkpoint_under_the_same_name_and_path_is_rescored(cpu_servers: CpuServers, tmp_path: Path) -> None:
    model_dir = tmp_path / "reward"
    shutil.copytree(TINY_MODELS / "reward", model_dir)
    base = with_ports(cpu_servers.config, {"reward": port(52)})
    role = base.roles["reward"]
    assert role.serve is not None
    serve = role.serve.replace(path=str(model_dir))
    cfg = base.replace(roles={"reward": role.replace(serve=serve)})
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text())
    data = tmp_path / "chat_filtered.json"
    data.write_text(json.dumps(records[:5]))
    config = tmp_path / "c.yaml"
    run_cfg = RunConfig.from_data(cfg.to_data() | {"data": str(data)})
    config.write_text(yaml.safe_dump(run_cfg.to_data(exclude_none=True)))
    state = tmp_path / "state"

    def run(out: Path, *extra: str) -> dict:
        proc = cli("run", "--config", str(config), "--out", str(out), "--json", *extra)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return dict(json.loads(proc.stdout))

    start_servers(cfg, repo_root=REPO, state_dir=state)
    try:
        before = run(tmp_path / "run")
        n = stored(tmp_path / "run")
        assert run(tmp_path / "run")["identity"] == before["identity"]  # the same checkpoint: nothing rescored
        assert stored(tmp_path / "run") == n
    finally:
        stop_servers(state)
    negate_reward_head(model_dir)
    start_servers(cfg, repo_root=REPO, state_dir=state)
    try:
        after = run(tmp_path / "run")
        fresh = run(tmp_path / "fresh", "--fresh")
    finally:
        stop_servers(state)
    assert stored(tmp_path / "run") == 2 * n  # every sequence scored again, the old scores kept apart
    served = after["identity"]["models"]["reward"]
    assert served["served"] == before["identity"]["models"]["reward"]["served"]  # same name, path, length
    assert served["epoch"] != before["identity"]["models"]["reward"]["epoch"]
    assert after["domains"] == fresh["domains"] and after["domains"] != before["domains"]


def test_judge_without_health_rides_out_429_bursts(cpu_servers: CpuServers, tmp_path: Path) -> None:
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text())
    records.sort(key=lambda r: len(r["prompt"]) + sum(len(x) for x in r["chosen"] + r["rejected"]))
    data = tmp_path / "chat_filtered.json"
    data.write_text(json.dumps(records[:1]))
    faults = Faults(first_429=12, retry_after="0.2", no_health=True)
    with FaultProxy(cpu_servers.urls["policy"], faults=faults) as proxy:
        cfg = {
            "model": "tiny-judge",
            "type": "judge",
            "data": str(data),
            "roles": {"judge": {"served_model": "tiny-policy", "endpoints": [proxy.url], "concurrency": 2}},
            "judge": {"max_tokens": 4},
            "client": {"max_retries": 20},  # 429s never run out the retries here, whatever their spread
        }
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump(cfg))
        proc = cli("run", "--config", str(config), "--out", str(tmp_path / "run"), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proxy.injected["429"] == 12  # twelve refusals, more than enough to eject an endpoint on failures
    assert "taken out" not in proc.stderr and proxy.counts["/health"] == 0
    s = json.loads(proc.stdout)
    assert s["scored"] == 1 and s["failed"] == 0 and s["complete"] is False  # one domain of four


def test_a_minus_infinity_log_prob_is_the_samples_failure(cpu_servers: CpuServers, tmp_path: Path) -> None:
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text())
    records.sort(key=lambda r: len(r["prompt"]) + sum(len(x) for x in r["chosen"] + r["rejected"]))
    data = tmp_path / "chat_filtered.json"
    data.write_text(json.dumps(records[:3]))
    probes: set[bytes] = set()  # the start-up checks' requests (the endpoint's probe, the fingerprint)

    def minus_inf(path: str, request: bytes, body: bytes) -> bytes:
        if path != "/inference/v1/generate":  # the launcher's DPO servers answer it (--enable-scale-out)
            return body
        if len(probes) < 2 or request in probes:
            probes.add(request)
            return body  # identity checks stay real: at start and again on each new connection
        data = json.loads(body)
        entry = data["prompt_logprobs"][-1]
        entry[next(iter(entry))]["logprob"] = float("-inf")
        return json.dumps(data).encode()  # written as -Infinity, as Python's json and vLLM do

    with FaultProxy(cpu_servers.urls["policy"], rewrite=minus_inf) as proxy:
        cfg = {
            "model": "tiny-dpo",
            "type": "dpo",
            "data": str(data),
            "dpo": {"reward": "sum"},  # reference-free: no reference role at all
            "roles": {"policy": {"served_model": "tiny-policy", "endpoints": [proxy.url]}},
        }
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump(cfg))
        proc = cli("run", "--config", str(config), "--out", str(tmp_path / "run"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    s = summary(tmp_path / "run")
    assert s["failed"] == 3 and s["scored"] == 0
    failures = [json.loads(x) for x in (tmp_path / "run" / "failures.jsonl").read_text().splitlines()]
    assert len(failures) == 3 and all("non-finite log-prob" in f["reason"] for f in failures)
