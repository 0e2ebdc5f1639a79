"""docs/python-api.md as a user reads it: its metric names are what `metrics()` gives, its examples run (the
training-script one against vLLM in tests/test_api_example.py), and a user's script type-checks against the
installed package with the project's mypy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import yaml
from conftest import REPO
from helpers_data import require_rmbench

import rmbench_client as rmb

PAGE = REPO / "docs" / "python-api.md"
BASELINE = {"model": "baseline:random", "benchmark": "rm-bench"}


def example(containing: str) -> str:
    """The page's python block that holds `containing`."""
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S) if containing in b]
    return block


def test_the_documented_metric_names_are_the_metrics(tmp_path):
    result = rmb.evaluate(BASELINE, data=require_rmbench(), out=tmp_path / "run", limit=6)
    metrics = result.metrics()
    for page in (PAGE, REPO / "docs" / "usage.md", REPO / "README.md"):
        named = set(re.findall(r"`(rm-bench/[\w./-]+)`", page.read_text()))
        assert all(name in metrics for name in named), (page.name, sorted(named - set(metrics)))
    assert {"rm-bench/headline", "rm-bench/columns/avg", "rm-bench/groups/chat/avg"} <= set(metrics)


def test_the_compare_example_runs(tmp_path):
    data = require_rmbench()
    for name, model in (("rm-a", "baseline:random"), ("rm-b", "baseline:longer")):
        rmb.evaluate({"model": model, "benchmark": "rm-bench"}, data=data, out=tmp_path / "runs" / name / "rm-bench",
                     limit=20)  # fmt: skip
    code = "import rmbench_client as rmb\n" + example("rmb.compare(")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    columns = rmb.compare([tmp_path / "runs" / "rm-a" / "rm-bench", tmp_path / "runs" / "rm-b" / "rm-bench"]).columns
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == list(columns) and columns


@pytest.mark.slow
def test_the_training_process_example_runs(tmp_path):
    """The trackers section's example, on a baseline config: both checkpoints' numbers in the script's MLflow run
    beside its loss, and the async evaluation within its deadline."""
    pytest.importorskip("mlflow")
    config = tmp_path / "eval.yaml"
    config.write_text(yaml.safe_dump(BASELINE | {"data": str(require_rmbench()), "limit": 6}))
    uri = f"file:{tmp_path / 'mlruns'}"
    env = os.environ | {"EVAL_CONFIG": str(config), "EVAL_OUT": str(tmp_path / "runs"), "MLFLOW_TRACKING_URI": uri,
                        "MLFLOW_ALLOW_FILE_STORE": "true"}  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", example("evaluate_async")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["step 100", "step 200"], proc.stdout
    assert rmb.load_result(tmp_path / "runs" / "async").scored == 6
    from mlflow.tracking import MlflowClient

    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # to read the store in this test's process
    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("reward-model").experiment_id])
    history = {key: sorted(m.step for m in client.get_metric_history(run.info.run_id, key))
               for key in ("train/loss", "rm-bench/headline")}  # fmt: skip
    assert history == {"train/loss": [100, 200], "rm-bench/headline": [100, 200]}
    assert run.info.status == "FINISHED"  # ended by the script's `with`, not by the tracker


USER_SCRIPT = """
import rmbench_client as rmb

result: rmb.BenchmarkResult = rmb.load_result("runs/x/rm-bench")
status: rmb.Status = result.status
rows: list[rmb.WatchRow] = rmb.watch("training-run", "eval.yaml", once=True)
print(status, rows, result.headline.value)
print(result.headline.valu)
"""


@pytest.mark.slow
def test_a_users_script_type_checks_against_the_installed_package(tmp_path):
    """Outside the checkout (where only the installed package can be found), mypy --strict reads the package's
    types: the one wrong attribute is reported, and nothing else (a package it could not find would be an
    import error and `Any` everywhere)."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(USER_SCRIPT))
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    # the project's settings and cache (`make lint` fills it first), so that only the script is checked anew; with
    # ignore_missing_imports a package mypy could not find would be Any, and the wrong attribute go unreported
    flags = ["--strict", "--ignore-missing-imports", "--python-version", "3.11"]
    args = [sys.executable, "-m", "mypy", *flags, "--cache-dir", str(REPO / ".mypy_cache"), str(script)]
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and '"Estimate" has no attribute "valu"' in errors[0], proc.stdout


def test_watch_rows_and_results_are_typed_in_the_json_they_come_from(tmp_path):
    """A watch row read back (a restart) is the typed row the pass returned."""
    data = require_rmbench()
    root = tmp_path / "train"
    (root / "checkpoint-5").mkdir(parents=True)
    (root / "checkpoint-5" / "config.json").write_text("{}")
    header = b"{}"
    (root / "checkpoint-5" / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    cfg = BASELINE | {"data": str(data)}
    (row,) = rmb.watch(root, cfg, out=tmp_path / "eval", benchmarks=["rm-bench"], data_root=data.parent, limit=4,
                       once=True, settle=0.0)  # fmt: skip
    cell = row.results["rm-bench"]
    assert row.done and row.step == 5 and cell.status == "partial" and cell.headline_name == "avg"
    result = rmb.load_result(row.directory / "rm-bench")
    assert cell.headline == result.headline and isinstance(cell.headline, rmb.Estimate)
    assert result.stamp is not None and result.stamp.call.startswith(f"rmbench_client.watch({str(root)!r}, <dict>, ")
    (again,) = rmb.watch(root, cfg, out=tmp_path / "eval", data_root=data.parent, once=True, settle=0.0)  # read back
    assert again == row
    table = json.loads((tmp_path / "eval" / "watch.json").read_text())
    assert table["checkpoints"][0]["results"]["rm-bench"]["value"] == result.headline.value
