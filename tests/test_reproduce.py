"""`rmbench-client reproduce` and `rmbench_client.reproduce`: a run run again as it recorded itself, its data checked
by content first, its servers asked afresh, and the agreement said (exit 0 agree, 1 not, 2 a mistake). Baselines
(no server) for the machinery; the session's real vLLM CPU servers for a DPO run reproduced on the same models
(agree) and with another model as its reference (disagree, the model named); its policy's URL held credentials,
which no output file holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers_cli import cli, one_error_line
from helpers_data import require_rmbench

import rmbench_client as rmb
from rmbench_client.analysis.reproduction import check_models
from rmbench_client.config.loading import load_config
from rmbench_client.examples import PromptScores
from rmbench_client.results.agreement import agreement
from rmbench_client.run.runner import run

SECRET = "s3cret-pass-word"


def _scores(pid: str, *values: float, group: str = "chat") -> PromptScores:
    half = len(values) // 2
    return PromptScores(pid, group, tuple(values[:half]), tuple(values[half:]))


def test_agreement_is_each_number_within_the_tolerance_relative_above_one():
    recorded = [_scores("a", 1.0, 0.5), _scores("b", 200.0, -3.0), _scores("c", 0.25, 0.75)]
    same = agreement(recorded, [_scores("a", 1.0, 0.5), _scores("b", 200.1, -3.0), _scores("c", 0.2505, 0.75)], 1e-3)
    assert same.agree and same.compared == 3 and same.largest == pytest.approx(0.1) and same.largest_at == "b"
    off = agreement(recorded, [_scores("a", 1.0, 0.5), _scores("b", 200.3, -3.0)], 1e-3)  # 0.3 > 1e-3 * 200
    assert not off.agree and off.differ == ("b",) and off.unscored == ("c",) and off.compared == 2
    cut = PromptScores("a", "chat", (), (), steps=(0.9,))
    assert agreement([PromptScores("a", "chat", (), (), steps=(0.9, 0.1))], [cut], 1.0).differ == ("a",)
    judged = agreement([PromptScores("a", "chat", (), (), results=(1.0,))],
                       [PromptScores("a", "chat", (), (), results=(0.5,))], 0.1)  # fmt: skip
    assert judged.differ == ("a",) and judged.largest == 0.5
    assert not agreement([], [], 1e-3).agree  # nothing compared is no agreement


def test_each_role_is_named_the_same_checkpoint_another_one_or_another_model():
    served = {"id": "rm", "root": "/m/rm", "max_model_len": 4096, "version": "0.13.0"}
    was = {"models": {"reward": {"served": served, "fingerprint": [1.0, 2.0]}}}
    again = {"models": {"reward": {"served": served | {"version": "0.20.2"}, "fingerprint": [1.0, 2.0005]}}}
    (same,) = check_models(was, again)
    assert same.same is True and "the same checkpoint" in same.said
    (other,) = check_models(was, {"models": {"reward": {"served": served, "fingerprint": [1.0, 2.5]}}})
    assert other.same is False and "another checkpoint of rm" in other.said and "0.5" in other.said
    moved = {"models": {"reward": {"served": served | {"root": "/m/other"}, "fingerprint": [1.0, 2.0]}}}
    (model,) = check_models(was, moved)
    assert model.same is False and model.said == "reward: another model: rm at /m/other, the run's rm at /m/rm"


@pytest.fixture
def baseline_run(tmp_path: Path) -> Path:
    """baseline:random (seed 3) on the first 12 prompts of a copy of RM-Bench's chat file, run in this process."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(require_rmbench() / "chat_filtered.json", data)
    out = tmp_path / "run"
    cfg = {"model": "baseline:random", "seed": 3, "data": str(data), "out": str(out), "limit": 12}
    run(load_config(None, cfg), progress=False, heatmaps=False)
    return out


def test_a_baseline_run_reproduces_and_the_reproduction_names_the_run(baseline_run: Path, tmp_path: Path):
    proc = cli("reproduce", str(baseline_run), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    again = baseline_run.parent / "run-reproduction"
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"reproduced {baseline_run} in {again} (recorded by rmbench-client {rmb.__version__}")
    assert lines[-1] == "agree: every prompt within the tolerance" and "12 compared at tolerance 0.001" in lines[2]
    recorded = json.loads((baseline_run / "summary.json").read_text())
    made = json.loads((again / "summary.json").read_text())
    assert made["avg"] == recorded["avg"] if "avg" in made else made["overall"] == recorded["overall"]
    assert made["stamp"]["reproduces"] == str(baseline_run) and made["stamp"]["command"].startswith(
        "rmbench-client reproduce "
    )
    assert made["stamp"]["config"] | {"out": ""} == recorded["stamp"]["config"] | {"out": ""}  # the run's settings
    found = json.loads(cli("reproduce", str(baseline_run), "--json", "--out", str(tmp_path / "r2")).stdout)
    assert found["agree"] and found["compared"] == 12 and found["differing"] == [] and found["largest"] == 0.0
    assert found["recorded"] == found["reproduced"] and found["models"] == []


def test_changed_data_is_refused_naming_the_file_before_anything_runs(baseline_run: Path, tmp_path: Path):
    data = tmp_path / "data" / "chat_filtered.json"
    records = json.loads(data.read_text())
    records[0]["chosen"][0] += " "
    data.write_text(json.dumps(records))
    line = one_error_line(cli("reproduce", str(baseline_run)), 2, str(data), "changed since the run")
    assert "reproduce scores only the data the run scored" in line
    assert not (baseline_run.parent / "run-reproduction").exists()
    elsewhere = tmp_path / "moved" / "chat_filtered.json"  # the same content elsewhere is the run's data
    elsewhere.parent.mkdir()
    shutil.copy(require_rmbench() / "chat_filtered.json", elsewhere)
    assert cli("reproduce", str(baseline_run), "--data", str(elsewhere), "--no-progress").returncode == 0
    other = require_rmbench() / "code_filtered.json"
    one_error_line(cli("reproduce", str(baseline_run), "--data", str(other)), 2, str(other), "not data the run scored")


def test_mistakes_are_one_error_line(baseline_run: Path, tmp_path: Path):
    one_error_line(cli("reproduce", str(tmp_path / "nowhere")), 2, "not a run directory")
    one_error_line(cli("reproduce", str(baseline_run), "--out", str(baseline_run)), 2, "is the run itself")
    with pytest.raises(rmb.ConfigError, match=r"seed cannot be changed"):
        rmb.reproduce(baseline_run, overrides={"seed": 4})
    with pytest.raises(rmb.ConfigError, match=r"\(out=\) is the run itself"):
        rmb.reproduce(baseline_run, out=baseline_run)
    with pytest.raises(TypeError, match="tolerance="):
        rmb.reproduce(baseline_run, tolerance="0.1")


def test_a_run_from_before_stamps_is_reproduced_from_its_config_yaml(baseline_run: Path, tmp_path: Path):
    summary = json.loads((baseline_run / "summary.json").read_text())
    del summary["stamp"]
    (baseline_run / "summary.json").write_text(json.dumps(summary))
    done = rmb.reproduce(baseline_run, out=tmp_path / "again")
    assert isinstance(done, rmb.Reproduction) and done.agree and done.agreement.compared == 12
    assert done.run.stamp is None and done.result.stamp is not None
    assert done.result.stamp.reproduces == str(baseline_run) and done.result.stamp.call.startswith(
        "rmbench_client.reproduce("
    )
    assert any("config.yaml" in note for note in done.notes) and done.recorded == done.reproduced


@pytest.fixture(scope="module")
def few_prompts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 4 shortest chat prompts of the real file."""
    out = tmp_path_factory.mktemp("few")
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text())
    records.sort(key=lambda r: len(r["prompt"]) + sum(len(x) for x in r["chosen"] + r["rejected"]))
    (out / "chat_filtered.json").write_text(json.dumps(records[:4]))
    return out


@pytest.mark.server
def test_a_dpo_run_agrees_on_its_servers_and_not_with_another_reference(cpu_servers, few_prompts, tmp_path):
    """The run's policy URL held credentials: no output file names them, and a reproduction must be given the URL
    again. On the same servers every prompt agrees and each model is the same checkpoint; with the policy serving
    as the reference too, every DPO reward changes and the reference is named another model."""
    policy, reference = cpu_servers.urls["policy"], cpu_servers.urls["reference"]
    secret_url = policy.replace("http://", f"http://reader:{SECRET}@")
    cfg = cpu_servers.config.to_data(exclude_none=True) | {"type": "dpo", "model": "tiny-dpo", "limit": 3}
    cfg["roles"]["policy"]["endpoints"] = [secret_url]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    original = tmp_path / "run"
    proc = cli("run", "--config", str(tmp_path / "c.yaml"), "--data", str(few_prompts), "--out", str(original),
               "--no-progress", "--no-heatmaps")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stderr + proc.stdout
    for path in original.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
    stamp = json.loads((original / "summary.json").read_text())["stamp"]
    assert stamp["config"]["roles"]["policy"]["endpoints"] == [policy.replace("http://", "http://<secret>@")]
    assert set(stamp["libraries"]) == {"numpy", "jinja2"}  # the client rendered the models' template

    one_error_line(cli("reproduce", str(original)), 2, "policy endpoint was recorded masked")
    same = cli("reproduce", str(original), "--policy-endpoint", policy, "--no-progress")
    assert same.returncode == 0, same.stdout + same.stderr
    said = same.stdout.splitlines()
    assert said[-1] == "agree: every prompt within the tolerance" and "3 compared" in said[2]
    assert any(line.startswith("policy: the same checkpoint (tiny-policy") for line in said)
    assert any(line.startswith("reference: the same checkpoint (tiny-reference") for line in said)

    other = cli("reproduce", str(original), "--policy-endpoint", policy, "--reference-endpoint", policy,
                "--reference-model", "tiny-policy", "--out", str(tmp_path / "other"), "--json")  # fmt: skip
    assert other.returncode == 1, other.stderr
    found = json.loads(other.stdout)
    assert not found["agree"] and len(found["differing"]) == 3 and found["largest"] > 1e-3
    checks = {m["role"]: m for m in found["models"]}
    assert checks["policy"]["same"] is True and checks["reference"]["same"] is False
    models = cpu_servers.models_dir
    assert checks["reference"]["said"] == (
        f"reference: another model: tiny-policy at {models / 'policy'}, the run's "
        f"tiny-reference at {models / 'reference'}"
    )
    assert reference not in json.dumps(found)  # the run's reference was not asked
