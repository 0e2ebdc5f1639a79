"""Results in the experiment tracker: MLflow and Weights & Biases (the extras `rmbench-client[mlflow]`,
`rmbench-client[wandb]`). Off unless a tracker is given (`trackers=` in the API, `--mlflow` / `--wandb` on the
command line); neither library is imported before a tracker logs, and a tracker changes no process-wide setting.

A tracker logs each run's numbers (`Scores.metrics`: `<benchmark>/headline`, each headline column and each group's
numbers, plus `<benchmark>/complete` 1 or 0) at the checkpoint's step, so that they plot against the loss curves;
the run's `summary.json` and its report page are logged as artifacts.

The caller's run stays the caller's: a tracker logs into the run it is given, else the run active in the caller
(`bind`, called by the API in the caller's thread before each evaluation: MLflow keeps its active run per thread),
and creates a run of its own only when there is neither; `close` ends only a run it created. A tracker that fails
never costs the result: the API records the failure in the result (`tracker_errors`) and goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from .. import constants as C
from ..errors import ConfigError, RmbError, TrackerError
from ..examples import Example
from ..results.typed import BenchmarkResult

log = logging.getLogger(__name__)


class Tracker(Protocol):
    """Where results are logged: numbers at a step, files as artifacts. A tracker may also have a `bind()` method,
    which the API calls in the caller's thread before each evaluation (to find the caller's active run there)."""

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        """Log `metrics` (named `<benchmark>/...`: one benchmark's) at `step` (None: the tracker's own counter), and
        the files in `artifacts`."""
        ...

    def close(self) -> None:
        """End the tracker's run, if it created one."""
        ...


def bind(trackers: Sequence[Tracker]) -> None:
    """Let each tracker that can find the caller's active run now, in the caller's thread."""
    for tracker in trackers:
        found = getattr(tracker, "bind", None)
        if callable(found):
            found()


def _library(name: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigError(f"{name} is not installed: pip install 'rmbench-client[{extra}]'") from None


def _key(name: str) -> str:
    """A metric name MLflow and W&B both accept (letters, digits, _ - . / and space)."""
    return re.sub(r"[^\w\-./ ]", "_", name)


def _benchmark(metrics: Mapping[str, float]) -> str | None:
    """The benchmark the metrics are of (their names' shared first part), None when they share none."""
    firsts = {name.split("/", 1)[0] for name in metrics if "/" in name}
    return _key(firsts.pop()) if len(firsts) == 1 and all("/" in name for name in metrics) else None


def _store(uri: str) -> str:
    """A tracking URI in one spelling: a file store (`file:/x`, `file:///x`, `file://localhost/x`, a plain or
    relative path) as `file:` and its absolute path; another scheme's URI with its scheme and host in lower case and
    no trailing slash (MLflow's bare `databricks` names no path)."""
    if uri in ("databricks", "databricks-uc"):
        return uri
    parts = urlsplit(uri)
    if parts.scheme in ("", "file") and parts.netloc in ("", "localhost"):
        path = unquote(parts.path) if parts.scheme else uri
        return "file:" + os.path.realpath(os.path.expanduser(path))
    return parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()).geturl().rstrip("/")


def same_store(a: str, b: str) -> bool:
    """Two tracking URIs of one store, however each is spelled."""
    return _store(a) == _store(b)


class MLflowTracker:
    """Logs into an MLflow run: `run_id` when given; else the run active in the caller's thread (`mlflow.start_run`)
    when it is on the same store (however each URI spells it: `file:/x`, `file:///x`, `/x`); else a run of its own,
    created on the first `log` in `experiment` at `tracking_uri` (default: MLflow's own setting) and ended by
    `close`. A step of None is this tracker's own count
    of the evaluations that logged through it (0, 1, ...; one API call is one, so a suite's benchmarks share its
    step; without the API's `bind` between them, each `log` is one). Artifacts go under `step-<step>/<benchmark>/`.

    A `file:` URI is MLflow's local store, which MLflow 3 opens only when `MLFLOW_ALLOW_FILE_STORE=true` is in the
    environment: the tracker never sets it (it would change the whole process); the command line does, for its own
    process."""

    def __init__(
        self,
        tracking_uri: str | None = None,
        experiment: str = C.TRACKER_PROJECT,
        run_name: str | None = None,
        run_id: str | None = None,
    ) -> None:
        self.tracking_uri, self.experiment, self.run_name = tracking_uri, experiment, run_name
        self._given = run_id
        self._joined: str | None = None  # the caller's active run
        self._own: str | None = None  # the run it created
        self._bound = False
        self._logged = 0  # steps counted so far
        self._current: int | None = None  # the counted step of the evaluation logging now
        self._shared = False  # the logs until the next `bind` are of one evaluation (an API call: a suite's)
        self._client: Any = None

    @property
    def run_id(self) -> str | None:
        """The run it logs into (None before a run of its own is created)."""
        return self._given or self._joined or self._own

    def bind(self) -> None:
        """An evaluation begins (its logs share a counted step); the run active in this thread, if any, is the one
        to log into."""
        self._current, self._shared = None, True
        self._join()

    def _join(self) -> None:
        self._bound = True
        self._joined = None
        mlflow: Any = sys.modules.get("mlflow")  # a run can be active only where the caller imported MLflow
        active = mlflow.active_run() if mlflow is not None else None
        # not another store's; one store may be spelled in several ways (file:/x, file:///x, /x)
        if active is not None and (
            self.tracking_uri is None or same_store(self.tracking_uri, mlflow.get_tracking_uri())
        ):
            self._joined = active.info.run_id

    def _target(self) -> tuple[Any, str]:
        if self._client is None:
            self._client = _library("mlflow.tracking", "mlflow").MlflowClient(tracking_uri=self.tracking_uri)
        if not self._bound:
            self._join()
        found = self._given or self._joined
        if found is None:
            if self._own is None:
                got = self._client.get_experiment_by_name(self.experiment)
                experiment_id = got.experiment_id if got else self._client.create_experiment(self.experiment)
                self._own = self._client.create_run(experiment_id, run_name=self.run_name).info.run_id
            found = self._own
        return self._client, found

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        client, run_id = self._target()
        entities = _library("mlflow.entities", "mlflow")
        if self._current is None:  # the evaluation's first log counts a step, whether it is given one or not
            self._current, self._logged = self._logged, self._logged + 1
        at = step if step is not None else self._current
        if not self._shared:
            self._current = None
        now = int(time.time() * 1000)
        batch = [entities.Metric(_key(k), float(v), now, at) for k, v in metrics.items()]
        for i in range(0, len(batch), C.TRACKER_BATCH):  # MLflow takes at most 1000 metrics a call
            client.log_batch(run_id, metrics=batch[i : i + C.TRACKER_BATCH])
        # per benchmark: a suite's benchmarks log at one step, each its own summary.json
        folder = f"step-{at}" if (name := _benchmark(metrics)) is None else f"step-{at}/{name}"
        for path in artifacts:
            client.log_artifact(run_id, str(path), artifact_path=folder)

    def close(self) -> None:
        """End the run it created (a given or joined run stays as it is)."""
        if self._client is not None and self._own is not None:
            self._client.set_terminated(self._own)
            self._own = None


class WandbTracker:
    """Logs into a Weights & Biases run: `run` when given; else the caller's active run (`wandb.run`, from
    `wandb.init`); else a run of its own in `project`, started on the first `log` beside any other (it never becomes
    `wandb.run`) and finished by `close`. `mode` "offline" writes its files under `directory` (default ./wandb) for
    a later `wandb sync`, "online" sends them (default: W&B's own setting).

    W&B's own step only goes forward, and a training run's is the trainer's: the numbers carry the checkpoint's step
    as `rmbench-client/step`, which W&B plots them against (`define_metric`); in the caller's run they join its
    current row (`commit=False`), so its own step never moves."""

    def __init__(
        self,
        project: str = C.TRACKER_PROJECT,
        mode: str | None = None,
        directory: str | Path | None = None,
        run_name: str | None = None,
        run: Any = None,
    ) -> None:
        self.project, self.mode, self.run_name = project, mode, run_name
        self.directory = str(directory) if directory is not None else None
        self._given = run
        self._joined: Any = None  # the caller's active run
        self._own: Any = None  # the run it started
        self._bound = False
        self._defined: set[tuple[int, str]] = set()

    @property
    def run(self) -> Any:
        """The run it logs into (None before a run of its own is started)."""
        return self._given or self._joined or self._own

    def bind(self) -> None:
        """The caller's active run, if any, is the one to log into."""
        self._bound = True
        wandb = sys.modules.get("wandb")  # a run can be active only where the caller imported W&B
        active = getattr(wandb, "run", None) if wandb is not None else None
        self._joined = active if active is not None and active is not self._own else None

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        wandb = _library("wandb", "wandb")
        if not self._bound:
            self.bind()
        run = self._given or self._joined
        own = run is None
        if run is None:
            if self._own is None:
                self._own = wandb.init(project=self.project, mode=self.mode, dir=self.directory, name=self.run_name,
                                       reinit="create_new")  # fmt: skip
            run = self._own
        data: dict[str, float] = {_key(k): v for k, v in metrics.items()}
        if step is not None:
            for key in data:
                if (id(run), key) not in self._defined:
                    run.define_metric(key, step_metric=C.TRACKER_STEP_METRIC)
                    self._defined.add((id(run), key))
            data[C.TRACKER_STEP_METRIC] = step
        run.log(data, commit=own)
        for path in artifacts:
            artifact = wandb.Artifact(_key(f"{path.parent.name}-{path.stem}").replace("/", "-"), type="evaluation")
            artifact.add_file(str(path))
            run.log_artifact(artifact)

    def close(self) -> None:
        """Finish the run it started (a given or joined run stays the caller's)."""
        if self._own is not None:
            self._own.finish()
            self._own = None


def report_page(result: BenchmarkResult, examples: Mapping[str, Example] | None = None) -> list[Path]:
    """The run's report page, written into its run directory for the trackers (built from `examples`, the prompts
    the run loaded, where they are at hand); none when the run scored nothing or its benchmark has no page."""
    from .page import write_report

    if not result.scored:
        return []
    try:
        path, _ = write_report([str(result.run_dir)], seed=C.BOOTSTRAP_SEED, examples=examples)
    except RmbError as exc:
        log.info("no report page for %s: %s", result.run_dir, exc)
        return []
    return [Path(path)]


def log_result(tracker: Tracker, result: BenchmarkResult, step: int | None, artifacts: Sequence[Path] = ()) -> None:
    """Log a run's numbers at `step`, its `summary.json` and `artifacts` (its report page). TrackerError when the
    tracker refuses (its library's own errors named)."""
    metrics = result.metrics() | {f"{result.benchmark}/complete": 1.0 if result.complete else 0.0}
    try:
        tracker.log(metrics, step, [result.run_dir / C.SUMMARY_FILE, *artifacts])
    except RmbError:
        raise
    except Exception as exc:  # the tracker library's own errors (a refused store, a network failure)
        raise TrackerError(f"{type(tracker).__name__}: {type(exc).__name__}: {exc}") from exc


def logged(
    trackers: Sequence[Tracker], result: BenchmarkResult, step: int | None, artifacts: Sequence[Path] = ()
) -> BenchmarkResult:
    """The result logged to every tracker; what a tracker refused is in the returned result's `tracker_errors`
    (and logged as a warning naming the run directory), never raised: the result and its files are whole."""
    errors = []
    for tracker in trackers:
        try:
            log_result(tracker, result, step, artifacts)
        except RmbError as exc:
            log.warning("%s: not logged: %s", result.run_dir, exc)
            errors.append(str(exc))
    return dataclasses.replace(result, tracker_errors=(*result.tracker_errors, *errors)) if errors else result
