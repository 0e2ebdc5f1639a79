"""End to end through real vLLM CPU servers: numbers equal an in-process transformers computation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, port, transformers_reference
from helpers_data import require_rmbench
from helpers_scoring import score

from rmbench_client.config.schema import RunConfig
from rmbench_client.launcher import start_servers, stop_servers
from rmbench_client.model_kinds.dpo import reduce, response_start
from rmbench_client.results.score_files import read_scores
from rmbench_client.run.runner import run

pytestmark = pytest.mark.server
CLI = str(Path(sys.executable).with_name("rmbench-client"))


def config_for(servers, tmp_path: Path, **update) -> RunConfig:
    return RunConfig.from_data({**servers.config.to_data(), "out": str(tmp_path / "run"), **update})


def write_config(cfg: RunConfig, path: Path) -> Path:
    path.write_text(yaml.safe_dump(cfg.to_data(exclude_none=True)))
    return path


@pytest.fixture(scope="module")
def small_data(tmp_path_factory) -> Path:
    """The 3 shortest chat prompts and the 2 shortest safety-response prompts of the real files."""
    out = tmp_path_factory.mktemp("data")
    for name, n in (("chat_filtered.json", 3), ("safety-response_filtered.json", 2)):
        records = json.loads((require_rmbench() / name).read_text())
        records.sort(key=lambda r: len(r["prompt"]) + sum(len(x) for x in r["chosen"] + r["rejected"]))
        (out / name).write_text(json.dumps(records[:n]))
    return out


@pytest.fixture(scope="module")
def transformers_values(cpu_servers, small_data) -> tuple[dict, dict]:
    """(pairs by (id, side, style), transformers outputs) for every sequence of the small data."""
    pairs, keys = [], []
    for path in sorted(small_data.iterdir()):
        sub = path.name.removesuffix("_filtered.json")
        for rec in json.loads(path.read_text()):
            for side in ("chosen", "rejected"):
                for style, text in enumerate(rec[side]):
                    pairs.append([rec["prompt"], text])
                    keys.append((f"{sub}/{rec['id']}", side, style))
    return {k: i for i, k in enumerate(keys)}, transformers_reference(cpu_servers.models_dir, pairs)


def samples(out_dir: Path) -> dict[str, dict]:
    lines = (out_dir / "samples.jsonl").read_text().splitlines()
    return {rec["id"]: rec for rec in map(json.loads, lines)}


def assert_close(got: dict[str, dict], index: dict, expected: list[float], tol: float) -> None:
    checked = 0
    for (rid, side, style), i in index.items():
        value = got[rid][f"score_{side}"][style]
        assert abs(value - expected[i]) <= tol, (rid, side, style, value, expected[i])
        checked += 1
    assert checked == len(expected) > 0


def test_reward_matches_transformers(cpu_servers, small_data, transformers_values, tmp_path):
    index, ref = transformers_values
    for template in ("server", "ids", "auto"):
        cfg = config_for(cpu_servers, tmp_path / template, data=str(small_data), reward={"template": template})
        result = run(cfg, progress=False)
        assert result.all_scored and result.summary["scored"] == 5
        assert_close(samples(result.out_dir), index, ref["reward"], 1e-4)
        # raw logits: a sigmoid would squash every score into (0, 1)
        assert max(abs(v) for v in ref["reward"]) > 0 and result.summary.get("warnings") is None


@pytest.mark.parametrize(
    ("mode", "template"),
    [("ratio", "server"), ("sum", "server"), ("avg", "server"), ("norm", "server"), ("ratio", "auto")],
)
def test_dpo_matches_transformers(cpu_servers, small_data, transformers_values, tmp_path, mode, template):
    index, ref = transformers_values
    dpo = {"reward": mode, "template": template}
    cfg = config_for(cpu_servers, tmp_path, data=str(small_data), type="dpo", model="tiny-dpo", dpo=dpo)
    result = run(cfg, progress=False)
    assert result.all_scored and "warnings" not in result.summary  # no boundary merge with this template
    expected = [
        reduce(mode, p, r if mode == "ratio" else None) for p, r in zip(ref["policy"], ref["reference"], strict=True)
    ]
    assert all(len(p) > 0 for p in ref["policy"])
    assert_close(samples(result.out_dir), index, expected, 1e-3)
    # the launcher starts DPO roles with --enable-scale-out: log-probs come from the token-in/token-out endpoint
    paths = result.summary["identity"]["logprobs_path"]
    assert set(paths.values()) == {"/inference/v1/generate"} and "policy" in paths


def test_dpo_without_the_token_endpoint_falls_back_to_completions(
    cpu_servers, small_data, transformers_values, tmp_path
):
    """A policy server started without --enable-scale-out (403 on /inference/v1/generate): /v1/completions, the
    same numbers, and the summary's identity says which path scored the run."""
    index, ref = transformers_values
    url = f"http://127.0.0.1:{port(71)}"
    policy = cpu_servers.config.roles["policy"]
    serve = policy.serve.replace(extra_args=["--no-enable-scale-out"])
    role = policy.replace(endpoints=[url], serve=serve)
    cfg = config_for(cpu_servers, tmp_path, data=str(small_data), type="dpo", model="tiny-dpo",
                     dpo={"reward": "sum", "template": "auto"}, roles={"policy": role.to_data()})  # fmt: skip
    state = tmp_path / "servers"
    start_servers(cfg, repo_root=REPO, state_dir=state)
    try:
        result = run(cfg, progress=False)
    finally:
        stop_servers(state)
    assert result.all_scored and result.summary["identity"]["logprobs_path"] == {"policy": "/v1/completions"}
    assert_close(samples(result.out_dir), index, [reduce("sum", p, None) for p in ref["policy"]], 1e-3)


def test_user_template_and_doubled_bos(cpu_servers, small_data, transformers_values, tmp_path):
    index, ref = transformers_values
    tok_config = cpu_servers.models_dir / "reward" / "tokenizer_config.json"
    cfg = config_for(cpu_servers, tmp_path / "a", data=str(small_data), reward={"template": str(tok_config)})
    result = run(cfg, progress=False)
    # the template writes BOS itself; sent without added special tokens, it gives the server-template numbers
    assert result.all_scored and "warnings" not in result.summary
    assert_close(samples(result.out_dir), index, ref["reward"], 1e-4)

    doubled = json.loads(tok_config.read_text())
    doubled["chat_template"] = "{{ bos_token }}" + doubled["chat_template"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(doubled))
    jinja = tmp_path / "doubled.jinja"  # a Jinja file takes its special tokens from the config beside it
    jinja.write_text(doubled["chat_template"])
    cfg = config_for(cpu_servers, tmp_path / "b", data=str(small_data), reward={"template": str(jinja)})
    result = run(cfg, progress=False)
    assert any("BOS twice" in w for w in result.summary["warnings"])


def test_bos_from_special_tokens_map_or_reported_missing(cpu_servers, small_data, transformers_values, tmp_path):
    """An older save keeps its special tokens in special_tokens_map.json only: the client renders BOS and eos_token
    from it (the model's template writes `+ eos_token`) and scores as transformers does; without that file BOS
    would be missing, which the start-up check says."""
    index, ref = transformers_values
    model = cpu_servers.models_dir / "reward"
    config = json.loads((model / "tokenizer_config.json").read_text())
    older = {k: v for k, v in config.items() if k not in ("added_tokens_decoder", "bos_token", "eos_token")}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(older))
    (tmp_path / "special_tokens_map.json").write_text((model / "special_tokens_map.json").read_text())
    cfg = config_for(
        cpu_servers, tmp_path / "a", data=str(small_data), reward={"template": str(tmp_path / "tokenizer_config.json")}
    )
    result = run(cfg, progress=False)
    assert result.all_scored and "warnings" not in result.summary
    assert_close(samples(result.out_dir), index, ref["reward"], 1e-4)

    (tmp_path / "special_tokens_map.json").unlink()
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(older | {"eos_token": config["eos_token"]}))
    cfg = config_for(
        cpu_servers, tmp_path / "b", data=str(small_data), reward={"template": str(tmp_path / "tokenizer_config.json")}
    )
    result = run(cfg, progress=False)
    (warning,) = result.summary["warnings"]
    assert warning.startswith("BOS missing:") and "special_tokens_map.json" in warning


def test_response_boundary_merge_is_detected():
    assert response_start([1, 5, 6], [1, 5, 6, 7, 8]) == (3, False)
    # "Answer: " + "yes" tokenized as "Answer:" + " yes": the prompt is no longer a prefix
    assert response_start([1, 5, 6], [1, 5, 9, 8]) == (2, True)
    assert math.isclose(reduce("ratio", [-1.0, -2.0], [-0.5, -0.5]), -2.0)
    assert math.isclose(reduce("norm", [-3.0, -4.0], None), -5.0)


@pytest.mark.heavy  # all 798 prompts through the server (what `make demo` runs): minutes; `make test-heavy`
def test_full_run_rescores_to_its_summary(cpu_servers, tmp_path):
    """The 4 real RM-Bench files through the reward server with the CLI; `score` gives the same summary."""
    cfg = config_for(cpu_servers, tmp_path, data=str(require_rmbench()))
    path = write_config(cfg, tmp_path / "config.yaml")
    proc = subprocess.run([CLI, "run", "--config", str(path), "--no-progress"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = Path(cfg.out or "")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scored"] == summary["prompts"] == 798 and summary["failed"] == 0
    assert sorted(summary["domains"]) == ["chat", "code", "safety"] and summary["missing_groups"] == ["math"]
    rescored = subprocess.run([CLI, "score", str(out / "samples.jsonl"), "--json"], capture_output=True, text=True)
    assert rescored.returncode == 0, rescored.stderr
    again = json.loads(rescored.stdout)
    assert again["domains"] == summary["domains"] and again["overall"] == summary["overall"]
    # the per-sample file also matches the store: the same numbers come back from the reader
    benchmark, records = read_scores([out / "samples.jsonl"])
    assert benchmark == "rm-bench" and score(benchmark, records)["overall"] == summary["overall"]
