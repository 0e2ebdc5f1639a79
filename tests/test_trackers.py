"""Trackers: MLflow's local file store (a `file:` URI, no server) and W&B's offline mode hold what a run logged;
the CLI's --mlflow flag logs as the API does."""

from __future__ import annotations

import json
import os
import time

import pytest
from helpers_cli import cli
from helpers_data import require_rmbench

import rmbench_client as rmb

pytest.importorskip("mlflow")
BASELINE = {"model": "baseline:random", "benchmark": "rm-bench"}


def mlflow_metrics(uri: str, experiment: str) -> dict[str, dict[int, float]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return {key: {m.step: m.value for m in client.get_metric_history(run.info.run_id, key)} for key in run.data.metrics}


def test_mlflow_file_store_holds_the_logged_numbers(tmp_path):
    data = require_rmbench()
    uri = f"file:{tmp_path / 'mlruns'}"
    tracker = rmb.MLflowTracker(uri, experiment="rm")
    try:
        first = rmb.evaluate(BASELINE, data=data, out=tmp_path / "a", limit=6, trackers=[tracker], step=10)
        second = rmb.evaluate(BASELINE | {"seed": 1}, data=data, out=tmp_path / "b", limit=6, trackers=[tracker],
                              step=20)  # fmt: skip
    finally:
        tracker.close()
    found = mlflow_metrics(uri, "rm")
    assert found["rm-bench/headline"] == {10: first.headline.value, 20: second.headline.value}
    assert found["rm-bench/groups/chat/hard"][10] == first.metrics()["rm-bench/groups/chat/hard"]
    assert found["rm-bench/complete"] == {10: 0.0, 20: 0.0}
    artifacts = list((tmp_path / "mlruns").rglob("step-10/summary.json"))
    assert len(artifacts) == 1 and json.loads(artifacts[0].read_text())["overall"] == first.summary["overall"]
    assert list((tmp_path / "mlruns").rglob("step-10/report.html"))  # the report page


def test_the_cli_flag_logs_as_the_api(tmp_path):
    data = require_rmbench()
    uri = f"file:{tmp_path / 'mlruns'}"
    proc = cli("run", "--model", "baseline:random", "--data", str(data), "--out", str(tmp_path / "run"),
               "--limit", "5", "--no-progress", "--mlflow", uri, "--step", "7")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = mlflow_metrics(uri, "rmbench-client")
    assert found["rm-bench/headline"] == {7: rmb.load_result(tmp_path / "run").headline.value}


def test_wandb_offline_writes_its_run_files(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    data = require_rmbench()
    monkeypatch.setenv("WANDB_SILENT", "true")
    tracker = rmb.WandbTracker("rm", mode="offline", directory=tmp_path)
    try:
        result = rmb.evaluate(BASELINE, data=data, out=tmp_path / "run", limit=5, trackers=[tracker], step=3)
    finally:
        tracker.close()
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    (records,) = run_dir.glob("*.wandb")  # the run's records (protobuf in a LevelDB log), for `wandb sync`
    deadline = time.monotonic() + 60  # W&B's own service process writes the log: on a busy machine, after finish
    while b"rm-bench/groups/chat/hard" not in (raw := records.read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    # each history item holds its key and its value as JSON text
    assert b"rm-bench/headline" in raw and json.dumps(result.headline.value).encode() in raw
    assert b"rm-bench/groups/chat/hard" in raw
    assert os.environ.get("WANDB_MODE") is None  # offline by the tracker's own setting
