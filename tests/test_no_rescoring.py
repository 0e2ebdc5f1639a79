"""No needless rescoring, against real vLLM CPU servers: the same weights served again with another max_model_len keep
their stored scores (a model's epoch is its fingerprint), and another DPO mode reuses the policy's stored
log-probs (DPO values are stored per role)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO, CpuServers, port, with_ports
from helpers_cli import cli, stored
from helpers_data import require_rmbench
from proxy import FaultProxy, Faults

from rmbench_client.config.schema import RunConfig
from rmbench_client.launcher import start_servers, stop_servers

pytestmark = pytest.mark.server
LOGPROB_PATHS = ("/inference/v1/generate", "/v1/completions")


def small_data(tmp_path: Path, n: int) -> Path:
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text())
    data = tmp_path / "chat_filtered.json"
    data.write_text(json.dumps(records[:n]))
    return data


def run_json(config: Path, out: Path, *extra: str) -> dict:
    proc = cli("run", "--config", str(config), "--out", str(out), "--json", "--no-progress", *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(json.loads(proc.stdout))


def test_a_restart_with_another_max_model_len_sends_nothing(cpu_servers: CpuServers, tmp_path: Path) -> None:
    def config_with(max_model_len: int, reward_port: int) -> tuple[RunConfig, Path]:
        base = with_ports(cpu_servers.config, {"reward": reward_port})
        role = base.roles["reward"]
        serve = role.serve.replace(max_model_len=max_model_len)  # type: ignore[union-attr]
        cfg = base.replace(roles={"reward": role.replace(serve=serve)})
        run_cfg = RunConfig.from_data(cfg.to_data() | {"data": str(small_data(tmp_path, 4))})
        path = tmp_path / f"c{max_model_len}.yaml"
        path.write_text(yaml.safe_dump(run_cfg.to_data(exclude_none=True)))
        return cfg, path

    state, out = tmp_path / "state", tmp_path / "run"
    _, config = config_with(4096, port(1))  # the session's reward server: the demo's model, max_model_len 4096
    before = run_json(config, out)
    n = stored(out)
    cfg, config = config_with(2048, port(61))  # the same model restarted with another max_model_len
    start_servers(cfg, repo_root=REPO, state_dir=state)
    try:
        dry = cli("run", "--config", str(config), "--out", str(out), "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr[-2000:]
        after = run_json(config, out)
    finally:
        stop_servers(state)
    plan = json.loads(dry.stdout)
    assert plan["to_send"] == 0 and plan["stored_prompts"] == plan["prompts"] == 4
    served = after["identity"]["models"]["reward"]["served"]
    assert served["max_model_len"] == 2048 != before["identity"]["models"]["reward"]["served"]["max_model_len"]
    assert after["identity"]["models"]["reward"]["epoch"] == before["identity"]["models"]["reward"]["epoch"]
    assert stored(out) == n and after["domains"] == before["domains"]


def test_dpo_ratio_then_avg_sends_no_policy_log_prob_request(cpu_servers: CpuServers, tmp_path: Path) -> None:
    data = small_data(tmp_path, 3)
    with FaultProxy(cpu_servers.urls["policy"], faults=Faults()) as proxy:
        roles = {
            "policy": {"served_model": "tiny-policy", "endpoints": [proxy.url]},
            "reference": {"served_model": "tiny-reference", "endpoints": [cpu_servers.urls["reference"]]},
        }

        def config(mode: str) -> Path:
            path = tmp_path / f"{mode}.yaml"
            cfg = {"model": "tiny-dpo", "type": "dpo", "data": str(data), "roles": roles, "dpo": {"reward": mode}}
            path.write_text(yaml.safe_dump(cfg))
            return path

        def logprob_requests() -> list[bytes]:
            return [body for path, body in proxy.requests if path in LOGPROB_PATHS]

        out = tmp_path / "run"
        counts, summaries = [len(logprob_requests())], []
        for mode in ("ratio", "ratio", "avg"):  # a scoring run, a rerun with everything stored, another mode
            summaries.append(run_json(config(mode), out))
            counts.append(len(logprob_requests()))
        n = stored(out)
        dry = cli("run", "--config", str(config("sum")), "--out", str(out), "--dry-run", "--json")
        fresh = run_json(config("avg"), tmp_path / "fresh")
        before = len(logprob_requests())
        ratio = run_json(config("ratio"), tmp_path / "fresh")  # avg then ratio: the reference's log-probs only
        after_avg = logprob_requests()[before:]
        sent = logprob_requests()
    first, rerun, avg = (sent[a:b] for a, b in zip(counts, counts[1:], strict=False))
    # a rerun with everything stored sends the identity checks' fingerprints only (at start, and on each new
    # connection): whatever another run sends beyond those bodies is a sequence
    probes = set(rerun)
    assert probes and not [b for b in after_avg if b not in probes]  # the policy's values stored by the avg run
    assert ratio["overall"] == summaries[0]["overall"]
    assert len([b for b in first if b not in probes]) >= 3 * 6  # at least one log-prob request per sequence
    assert not [b for b in avg if b not in probes]  # no sequence sent: the avg run reused every stored value
    assert n == 2 * json.loads(dry.stdout)["stored_units"]  # a policy and a reference value per sequence
    assert json.loads(dry.stdout)["to_send"] == 0
    assert summaries[2]["overall"] == fresh["overall"]  # the reused values exact
