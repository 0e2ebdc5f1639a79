"""Trackers inside a training script: the caller's MLflow or W&B run stays the caller's and receives the numbers at
the checkpoint's step; a tracker of its own is created only when the caller has none, and ended by `close`; a
tracker that fails never costs the result. MLflow's local file store (a `file:` URI, no server) and W&B's offline
mode hold what was logged; the CLI's --mlflow flag logs as the API does."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from helpers_cli import cli
from helpers_data import require_rmbench

import rmbench_client as rmb

pytest.importorskip("mlflow")
BASELINE = {"model": "baseline:random", "benchmark": "rm-bench"}
ALLOW = "MLFLOW_ALLOW_FILE_STORE"  # MLflow 3 opens its file store only when the caller allows it


def mlflow_runs(uri: str, experiment: str) -> dict[str, dict[str, dict[int, float]]]:
    """Per run id of the experiment, each metric's values by step."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id]) if found else []
    return {run.info.run_id: {key: {m.step: m.value for m in client.get_metric_history(run.info.run_id, key)}
                              for key in run.data.metrics} for run in runs}  # fmt: skip


def test_mlflow_creates_its_own_run_only_without_one_and_logs_at_each_step(tmp_path, monkeypatch):
    data = require_rmbench()
    monkeypatch.setenv(ALLOW, "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    tracker = rmb.MLflowTracker(uri, experiment="rm")
    try:
        first = rmb.evaluate(BASELINE, data=data, out=tmp_path / "a", limit=6, trackers=[tracker], step=10)
        second = rmb.evaluate(BASELINE | {"seed": 1}, data=data, out=tmp_path / "b", limit=6, trackers=[tracker],
                              step=20)  # fmt: skip
        third = rmb.evaluate(BASELINE, data=data, out=tmp_path / "c", limit=6, trackers=[tracker])  # no step
        own = tracker.run_id
    finally:
        tracker.close()
    assert first.tracker_errors == second.tracker_errors == third.tracker_errors == ()
    ((run_id, found),) = mlflow_runs(uri, "rm").items()  # one run: its own, the same for every call
    assert run_id == own and tracker.run_id is None
    # a step of None is the tracker's own count of its logs: the third
    assert found["rm-bench/headline"] == {10: first.headline.value, 20: second.headline.value, 2: third.headline.value}
    assert found["rm-bench/groups/chat/hard"][10] == first.metrics()["rm-bench/groups/chat/hard"]
    assert found["rm-bench/complete"] == {10: 0.0, 20: 0.0, 2: 0.0}
    artifacts = list((tmp_path / "mlruns").rglob("step-10/rm-bench/summary.json"))
    assert len(artifacts) == 1 and json.loads(artifacts[0].read_text())["overall"] == first.summary["overall"]
    assert list((tmp_path / "mlruns").rglob("step-10/rm-bench/report.html"))  # the report page
    from mlflow.tracking import MlflowClient

    assert MlflowClient(tracking_uri=uri).get_run(run_id).info.status == "FINISHED"  # close ended its own run


def test_the_callers_active_mlflow_run_stays_the_callers(tmp_path, monkeypatch):
    """A training script's active run (sync and async evaluations alike) receives the numbers at the checkpoint's
    step beside its loss; `close` leaves it running, and the script logs on into it."""
    import mlflow

    data = require_rmbench()
    monkeypatch.setenv(ALLOW, "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("training")
    tracker = rmb.MLflowTracker()  # made before the run starts: it finds the run active at each evaluation
    try:
        with mlflow.start_run() as run:
            mlflow.log_metric("loss", 1.0, step=100)
            first = rmb.evaluate(BASELINE, data=data, out=tmp_path / "a", limit=5, trackers=[tracker], step=100)

            async def checkpoint() -> rmb.BenchmarkResult:  # an async trainer: the run's thread is not the caller's
                return await rmb.evaluate_async(BASELINE, data=data, out=tmp_path / "b", limit=7, trackers=[tracker],
                                                step=200)  # fmt: skip

            second = asyncio.run(checkpoint())
            tracker.close()
            mlflow.log_metric("loss", 0.5, step=200)  # the script's run goes on
            status = mlflow.tracking.MlflowClient().get_run(run.info.run_id).info.status
    finally:
        mlflow.set_tracking_uri(previous)
    assert status == "RUNNING" and tracker.run_id == run.info.run_id
    runs = mlflow_runs(uri, "training")
    assert list(runs) == [run.info.run_id]  # no run of the tracker's own
    found = runs[run.info.run_id]
    assert found["loss"] == {100: 1.0, 200: 0.5}
    assert found["rm-bench/headline"] == {100: first.headline.value, 200: second.headline.value}
    assert first.tracker_errors == second.tracker_errors == ()


@pytest.mark.parametrize("spelling", ["file://{}", "{}", "file://localhost{}/"], ids=["file:///", "path", "localhost"])
def test_the_active_run_is_joined_however_its_store_is_spelled(tmp_path, monkeypatch, spelling):
    """The script set `file:/x`, the tracker was given `file:///x` (or the plain path): one store, the run joined."""
    import mlflow

    data = require_rmbench()
    monkeypatch.setenv(ALLOW, "true")
    store = tmp_path / "mlruns"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"file:{store}")
    mlflow.set_experiment("training")
    tracker = rmb.MLflowTracker(spelling.format(store))
    try:
        with mlflow.start_run() as run:
            result = rmb.evaluate(BASELINE, data=data, out=tmp_path / "a", limit=4, trackers=[tracker], step=5)
            tracker.close()
    finally:
        mlflow.set_tracking_uri(previous)
    assert result.tracker_errors == () and tracker.run_id == run.info.run_id
    runs = mlflow_runs(f"file:{store}", "training")
    assert list(runs) == [run.info.run_id] and runs[run.info.run_id]["rm-bench/headline"] == {5: result.headline.value}


def test_a_refused_store_costs_nothing_and_the_tracker_sets_no_environment(tmp_path, monkeypatch):
    """Without MLFLOW_ALLOW_FILE_STORE, MLflow 3 refuses its file store: the result comes back whole with the
    refusal recorded, its files written, and the tracker has not allowed the store behind the caller's back."""
    data = require_rmbench()
    monkeypatch.delenv(ALLOW, raising=False)
    env = dict(os.environ)
    tracker = rmb.MLflowTracker(f"file:{tmp_path / 'mlruns'}")
    result = rmb.evaluate(BASELINE, data=data, out=tmp_path / "run", limit=5, trackers=[tracker], step=1)
    tracker.close()
    assert dict(os.environ) == env
    (error,) = result.tracker_errors
    assert error.startswith("MLflowTracker: MlflowException") and ALLOW in error
    assert result.scored == 5 and result.status == "partial" and (tmp_path / "run" / "summary.json").is_file()
    assert rmb.load_result(tmp_path / "run").headline == result.headline


def test_a_suites_benchmarks_share_its_step_and_keep_their_own_artifacts(tmp_path, monkeypatch):
    """Each benchmark's summary.json under step-<step>/<benchmark>/ (none overwrites another's); without a step,
    one suite call is one step of the tracker's count, all its benchmarks at it."""
    data = require_rmbench()
    monkeypatch.setenv(ALLOW, "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    tracker = rmb.MLflowTracker(uri, experiment="suite")
    names = ["rm-bench", "judgebench"]
    try:
        at_7 = rmb.evaluate_suite(BASELINE, benchmarks=names, data_root=data.parent, out=tmp_path / "a", limit=4,
                                  trackers=[tracker], step=7)  # fmt: skip
        counted = [rmb.evaluate_suite(BASELINE, benchmarks=names, data_root=data.parent, out=tmp_path / out, limit=4,
                                      trackers=[tracker]) for out in ("b", "c")]  # fmt: skip
    finally:
        tracker.close()
    for suite in (at_7, *counted):
        assert sorted(suite.results) == sorted(names) and all(not r.tracker_errors for r in suite.results.values())
    for name in names:
        (summary,) = (tmp_path / "mlruns").rglob(f"step-7/{name}/summary.json")
        assert json.loads(summary.read_text())["benchmark"] == name
    ((_, found),) = mlflow_runs(uri, "suite").items()
    for name in names:  # the first call counted step 0; the next two, steps 1 and 2
        assert set(found[f"{name}/headline"]) == {7, 1, 2}
        assert list((tmp_path / "mlruns").rglob(f"step-2/{name}/summary.json"))


class Raising:
    """A tracker whose every log fails, as a tracking server that went away does."""

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        raise ConnectionError("tracking server unreachable")

    def close(self) -> None:
        pass


class Recording:
    """A tracker that keeps what it is given."""

    def __init__(self) -> None:
        self.logged: list[tuple[dict[str, float], int | None, list[str]]] = []

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        self.logged.append((dict(metrics), step, [p.name for p in artifacts]))

    def close(self) -> None:
        pass


def test_a_raising_tracker_never_loses_the_result(tmp_path):
    data = require_rmbench()
    recording = Recording()
    result = rmb.evaluate(BASELINE, data=data, out=tmp_path / "run", limit=6, trackers=[Raising(), recording],
                          step=30)  # fmt: skip
    assert result.tracker_errors == ("Raising: ConnectionError: tracking server unreachable",)
    assert result.scored == 6 and (tmp_path / "run" / "summary.json").is_file()
    ((metrics, step, artifacts),) = recording.logged  # the other tracker got everything
    assert step == 30 and metrics["rm-bench/headline"] == result.headline.value
    assert artifacts == ["summary.json", "report.html"]
    suite = rmb.evaluate_suite(BASELINE, benchmarks=["rm-bench"], data_root=data.parent, out=tmp_path / "suite",
                               limit=4, trackers=[Raising()], step=40)  # fmt: skip
    assert suite.results["rm-bench"].tracker_errors == ("Raising: ConnectionError: tracking server unreachable",)


@pytest.mark.slow
def test_the_cli_flag_logs_as_the_api(tmp_path, monkeypatch):
    data = require_rmbench()
    uri = f"file:{tmp_path / 'mlruns'}"
    proc = cli("run", "--model", "baseline:random", "--data", str(data), "--out", str(tmp_path / "run"),
               "--limit", "5", "--no-progress", "--mlflow", uri, "--step", "7")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    monkeypatch.setenv(ALLOW, "true")  # to read the store here
    (found,) = mlflow_runs(uri, "rmbench-client").values()
    assert found["rm-bench/headline"] == {7: rmb.load_result(tmp_path / "run").headline.value}


@pytest.mark.slow
def test_wandb_logs_into_the_callers_offline_run_at_the_checkpoints_step(tmp_path, monkeypatch):
    """The training script's W&B run (offline) gets the numbers beside its own row, with the checkpoint's step as
    their x-axis; the tracker's close leaves it open and the script logs on; a tracker without a caller's run
    starts its own and finishes it."""
    wandb = pytest.importorskip("wandb")
    from helpers_wandb import history

    data = require_rmbench()
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.chdir(tmp_path)
    for where in ("caller", "own"):
        (tmp_path / where).mkdir()
    run = wandb.init(project="training", mode="offline", dir=tmp_path / "caller")
    tracker = rmb.WandbTracker()
    try:
        run.log({"loss": 1.0}, step=5)
        result = rmb.evaluate(BASELINE, data=data, out=tmp_path / "run", limit=5, trackers=[tracker], step=500)
        tracker.close()
        run.log({"loss": 0.5}, step=6)  # would raise on a finished run
    finally:
        run.finish()
    own = rmb.WandbTracker("rm", mode="offline", directory=tmp_path / "own")
    alone = rmb.evaluate(BASELINE | {"seed": 2}, data=data, out=tmp_path / "alone", limit=5, trackers=[own], step=7)
    own.close()
    assert result.tracker_errors == alone.tracker_errors == ()
    assert os.environ.get("WANDB_MODE") is None  # offline by the runs' own settings

    def rows(where: Path, key: str) -> list[dict]:
        (file,) = where.glob("wandb/offline-run-*/*.wandb")
        deadline = time.monotonic() + 60  # W&B's service process writes the file: on a busy machine, after finish
        found = history(file)
        while not any(key in r for r in found) and time.monotonic() < deadline:
            time.sleep(0.5)
            found = history(file)
        return found

    caller = rows(tmp_path / "caller", "rm-bench/headline")
    (evaluated,) = [r for r in caller if "rm-bench/headline" in r]
    assert evaluated["rm-bench/headline"] == result.headline.value and evaluated["rmbench-client/step"] == 500
    assert evaluated["_step"] == 5  # beside the caller's row: its own step never moved
    assert [(r["_step"], r["loss"]) for r in caller if "loss" in r] == [(5, 1.0), (6, 0.5)]
    (mine,) = [r for r in rows(tmp_path / "own", "rm-bench/headline") if "rm-bench/headline" in r]
    assert mine["rm-bench/headline"] == alone.headline.value and mine["rmbench-client/step"] == 7
