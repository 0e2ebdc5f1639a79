"""Results in the experiment tracker: MLflow and Weights & Biases (the extras `rmbench-client[mlflow]`,
`rmbench-client[wandb]`). Off unless a tracker is given (`trackers=` in the API, `--mlflow` / `--wandb` on the
command line); neither library is imported before a tracker logs.

A tracker logs each run's numbers (`Scores.metrics`: `<benchmark>/headline`, each headline column and each group's
numbers, plus `<benchmark>/complete` 1 or 0) at the checkpoint's step, so that they plot against the loss curves;
the run's `summary.json` and its report page are logged as artifacts.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from . import constants as C
from .errors import ConfigError, RmbError, TrackerError
from .results import BenchmarkResult

log = logging.getLogger(__name__)


class Tracker(Protocol):
    """Where results are logged: numbers at a step, files as artifacts."""

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        """Log `metrics` at `step` (None: the tracker's own counter), and the files in `artifacts`."""
        ...

    def close(self) -> None:
        """End the tracker's run."""
        ...


def _library(name: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigError(f"{name} is not installed: pip install 'rmbench-client[{extra}]'") from None


def _key(name: str) -> str:
    """A metric name MLflow and W&B both accept (letters, digits, _ - . / and space)."""
    return re.sub(r"[^\w\-./ ]", "_", name)


class MLflowTracker:
    """One MLflow run, created on the first `log`, in `experiment` of the tracking server or store at
    `tracking_uri` (a `file:` URI is a local store and needs no server; default: MLflow's own setting)."""

    def __init__(
        self,
        tracking_uri: str | None = None,
        experiment: str = C.TRACKER_PROJECT,
        run_name: str | None = None,
    ) -> None:
        self.tracking_uri, self.experiment, self.run_name = tracking_uri, experiment, run_name
        self.run_id: str | None = None
        self._client: Any = None

    def _start(self) -> tuple[Any, str]:
        if self._client is None or self.run_id is None:
            if (self.tracking_uri or "").startswith("file:"):
                # MLflow 3 refuses its file store (in maintenance) unless allowed; a file: URI asks for exactly it
                os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
            tracking = _library("mlflow.tracking", "mlflow")
            self._client = tracking.MlflowClient(tracking_uri=self.tracking_uri)
            found = self._client.get_experiment_by_name(self.experiment)
            experiment_id = found.experiment_id if found else self._client.create_experiment(self.experiment)
            self.run_id = self._client.create_run(experiment_id, run_name=self.run_name).info.run_id
        return self._client, self.run_id

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        client, run_id = self._start()
        entities = _library("mlflow.entities", "mlflow")
        now = int(time.time() * 1000)
        batch = [entities.Metric(_key(k), float(v), now, step or 0) for k, v in metrics.items()]
        for i in range(0, len(batch), C.TRACKER_BATCH):  # MLflow takes at most 1000 metrics a call
            client.log_batch(run_id, metrics=batch[i : i + C.TRACKER_BATCH])
        folder = f"step-{step}" if step is not None else None
        for path in artifacts:
            client.log_artifact(run_id, str(path), artifact_path=folder)

    def close(self) -> None:
        if self._client is not None and self.run_id is not None:
            self._client.set_terminated(self.run_id)


class WandbTracker:
    """One Weights & Biases run, started on the first `log`, in `project`; `mode` "offline" writes the run's files
    under `directory` (default ./wandb) for a later `wandb sync`, "online" sends them (default: W&B's own setting)."""

    def __init__(
        self,
        project: str = C.TRACKER_PROJECT,
        mode: str | None = None,
        directory: str | Path | None = None,
        run_name: str | None = None,
    ) -> None:
        self.project, self.mode, self.run_name = project, mode, run_name
        self.directory = str(directory) if directory is not None else None
        self.run: Any = None

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        wandb = _library("wandb", "wandb")
        if self.run is None:
            self.run = wandb.init(project=self.project, mode=self.mode, dir=self.directory, name=self.run_name)
        self.run.log({_key(k): v for k, v in metrics.items()}, step=step)
        for path in artifacts:
            artifact = wandb.Artifact(_key(f"{path.parent.name}-{path.stem}").replace("/", "-"), type="evaluation")
            artifact.add_file(str(path))
            self.run.log_artifact(artifact)

    def close(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None


def _report_page(result: BenchmarkResult) -> Path | None:
    """The run's report page (written into its run directory), or None when it cannot be made (no data)."""
    from .report.page import write_report

    try:
        path, _ = write_report([str(result.run_dir)], None, None, C.BOOTSTRAP_SEED)
    except RmbError as exc:
        log.warning("no report page for %s: %s", result.run_dir, exc)
        return None
    return Path(path)


def log_result(tracker: Tracker, result: BenchmarkResult, step: int | None, report: bool = True) -> None:
    """Log a run's numbers at `step`, and its summary and (with `report`) report page as artifacts."""
    metrics = result.metrics() | {f"{result.benchmark}/complete": 1.0 if result.complete else 0.0}
    artifacts = [result.run_dir / C.SUMMARY_FILE]
    page = _report_page(result) if report and result.scored else None
    if page is not None:
        artifacts.append(page)
    try:
        tracker.log(metrics, step, artifacts)
    except RmbError:
        raise
    except Exception as exc:  # the tracker library's own errors (a refused store, a network failure)
        raise TrackerError(f"{type(tracker).__name__}: {type(exc).__name__}: {exc}") from exc
