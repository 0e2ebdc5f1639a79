"""The Python API: run a benchmark or the suite, re-score saved files, compare runs, from a script.

Every function works as the command of the same name does: the same run directories (`runs/<model>/<benchmark>`
unless `out` says otherwise), the same score store (a run again sends only what is missing: resume), the same lock
(a second run into a directory another run holds raises `RunLockedError`). A config is a `RunConfig`, the path of
an evaluation YAML, or a mapping of the same keys; `overrides` sets keys by their dotted names, as the flags do
(`{"roles.reward.endpoints": ["http://127.0.0.1:8000"]}`).

The `*_async` forms are for callers inside an event loop: the run goes to a worker thread (a run has its own event
loop), and the caller's loop keeps running. Cancelling the awaiting task does not stop that run; it ends on its own.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import constants as C
from .config import MAIN_ROLE, RunConfig, config_of
from .config import load_config as _load_yaml_config
from .errors import ConfigError, DataError
from .results import BenchmarkResult, Comparison, Estimate, Scores, SuiteResult, result_of, scores_of
from .summary import read_summary
from .trackers import Tracker, log_result

ConfigSource = RunConfig | str | Path | Mapping[str, Any]
"""A run's config: a `RunConfig`, an evaluation YAML's path, or a mapping of its keys."""


def load_config(source: ConfigSource, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    """The checked config of `source`, with `overrides` (dotted keys, None values ignored) applied over it, as the
    command line applies its flags (`config.config_of`).

    Raises:
        ConfigError: the file is missing or invalid, or a key is (the message names the file and key).
    """
    changes = dict(overrides or {})
    if isinstance(source, RunConfig):
        if not changes:
            return source
        source = source.to_data(exclude_none=True)
    if isinstance(source, str | Path):
        return _load_yaml_config(source, changes)
    if not isinstance(source, Mapping):
        raise ConfigError(f"a config is a RunConfig, a YAML path or a mapping, not {type(source).__name__}")
    return config_of(source, changes, "config")


def with_checkpoint(source: ConfigSource, checkpoint: str | Path, *, role: str | None = None) -> RunConfig:
    """The config with a role's `serve.path` set to a checkpoint directory (default role: the run's main one, the
    reward model, the judge, or the DPO policy), so that `serve` serves that checkpoint. The model's name in
    reports stays the config's.

    Raises:
        ConfigError: the role is not in the config or has no `serve` section.
    """
    cfg = load_config(source)
    name = role or MAIN_ROLE.get(cfg.type, "reward")
    found = cfg.roles.get(name)  # type: ignore[call-overload]
    if found is None or found.serve is None:
        raise ConfigError(f"role {name} has no serve section in the config: nothing to serve the checkpoint with")
    spec = found.serve.replace(path=str(Path(checkpoint).resolve()))
    return cfg.replace(roles={**cfg.roles, name: found.replace(serve=spec)})


def _text(path: str | Path | None) -> str | None:
    return str(path) if path is not None else None


def _overridden(source: ConfigSource, **keys: Any) -> RunConfig:
    return load_config(source, {k: v for k, v in keys.items() if v is not None})


def run_config(
    cfg: RunConfig, *, fresh: bool = False, progress: bool = False, heatmaps: bool = True
) -> tuple[BenchmarkResult, signal.Signals | None]:
    """One run of a checked config, and the signal that ended it (None when none did). What `evaluate` and the
    CLI's `run` share; a signal is the caller's to act on."""
    from .runner import run

    done = run(cfg, fresh=fresh, progress=progress, heatmaps=heatmaps)
    return result_of(done.out_dir, done.summary, done.failures, done.sent_sequences), done.signal


def _interrupted(sig: signal.Signals, where: Path) -> KeyboardInterrupt:
    return KeyboardInterrupt(f"interrupted by {sig.name}; every score is kept in {where}: run again to resume")


def evaluate(
    config: ConfigSource,
    *,
    benchmark: str | None = None,
    data: str | Path | None = None,
    out: str | Path | None = None,
    limit: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    fresh: bool = False,
    progress: bool = False,
    heatmaps: bool = False,
    trackers: Sequence[Tracker] = (),
    step: int | None = None,
) -> BenchmarkResult:
    """Run one benchmark (default: the config's) through the config's servers, as `rmbench-client run` does, and
    return its result. `fresh` forgets the scores stored by earlier runs in the run directory; each tracker logs
    the result at `step`. `heatmaps`: RM-Bench's heatmap PNGs, off by default here (matplotlib costs a checkpoint
    about 2 s of CPU; `rmbench-client run` draws them unless `--no-heatmaps`).

    A run whose servers went away past the patience returns with `aborted` set (and `complete` false): what was
    scored is kept, and the same call resumes it. SIGINT or SIGTERM during the run raise KeyboardInterrupt once the
    outputs are written.

    Raises:
        ConfigError: an invalid config or option.
        DataError: the benchmark's data is missing or invalid (names the file and record).
        RunLockedError: another run is writing into the same run directory.
        EndpointError: the servers cannot be used at all (unreachable at start, wrong model, rejected key).
    """
    cfg = _overridden(config, benchmark=benchmark, data=_text(data), out=_text(out), limit=limit)
    cfg = _overridden(cfg, **dict(overrides or {}))
    result, sig = run_config(cfg, fresh=fresh, progress=progress, heatmaps=heatmaps)
    for tracker in trackers:
        log_result(tracker, result, step)
    if sig is not None:
        raise _interrupted(sig, result.run_dir)
    return result


async def evaluate_async(
    config: ConfigSource,
    *,
    benchmark: str | None = None,
    data: str | Path | None = None,
    out: str | Path | None = None,
    limit: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    fresh: bool = False,
    heatmaps: bool = False,
    trackers: Sequence[Tracker] = (),
    step: int | None = None,
) -> BenchmarkResult:
    """`evaluate` for a caller inside an event loop (no progress bar; signals stay the caller's)."""
    return await asyncio.to_thread(
        evaluate, config, benchmark=benchmark, data=data, out=out, limit=limit, overrides=overrides, fresh=fresh,
        progress=False, heatmaps=heatmaps, trackers=trackers, step=step,
    )  # fmt: skip


def evaluate_suite(
    config: ConfigSource,
    *,
    benchmarks: Sequence[str] | None = None,
    data_root: str | Path | None = None,
    out: str | Path | None = None,
    limit: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    fresh: bool = False,
    progress: bool = False,
    heatmaps: bool = False,
    trackers: Sequence[Tracker] = (),
    step: int | None = None,
) -> SuiteResult:
    """Every benchmark whose data is under `data_root` (default data/, one folder per benchmark as `data fetch`
    lays it out), or those named, as `rmbench-client suite` does: one run directory per benchmark under `out`
    (default runs/<model>), and `suite.md` / `suite.json` there. A benchmark whose data is malformed is in
    `errors`, one without data in `missing`; the others still run. Each tracker logs every benchmark at `step`.

    Raises:
        ConfigError: an invalid config, option or benchmark name.
        RunLockedError, EndpointError: as `evaluate`.
    """
    from .benchmarks import registry
    from .suite import model_dir, run_suite

    names = [registry.get(n).name for n in benchmarks] if benchmarks is not None else None
    base = _overridden(config, out=_text(out), limit=limit)
    base = _overridden(base, **dict(overrides or {}))
    results: dict[str, BenchmarkResult] = {}
    ended: list[signal.Signals] = []

    def run_one(cfg: RunConfig) -> None:
        if ended:
            return  # interrupted: the other benchmarks are left for the next call
        result, sig = run_config(cfg, fresh=fresh, progress=progress, heatmaps=heatmaps)
        results[cfg.benchmark] = result
        if sig is not None:
            ended.append(sig)

    table = run_suite(base, names, data_root, run_one)
    rows = table["results"]
    suite = SuiteResult(
        model=base.model,
        directory=model_dir(base),
        results=results,
        missing={n: c["why"] for n, c in rows.items() if c["status"] == "missing" and n not in results},
        errors={n: c["why"] for n, c in rows.items() if c["status"] == "error"},
    )
    for tracker in trackers:
        for result in results.values():
            log_result(tracker, result, step)
    if ended:
        raise _interrupted(ended[0], suite.directory)
    return suite


async def evaluate_suite_async(
    config: ConfigSource,
    *,
    benchmarks: Sequence[str] | None = None,
    data_root: str | Path | None = None,
    out: str | Path | None = None,
    limit: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    fresh: bool = False,
    heatmaps: bool = False,
    trackers: Sequence[Tracker] = (),
    step: int | None = None,
) -> SuiteResult:
    """`evaluate_suite` for a caller inside an event loop."""
    return await asyncio.to_thread(
        evaluate_suite, config, benchmarks=benchmarks, data_root=data_root, out=out, limit=limit,
        overrides=overrides, fresh=fresh, progress=False, heatmaps=heatmaps, trackers=trackers, step=step,
    )  # fmt: skip


def rescore(
    paths: str | Path | Sequence[str | Path],
    *,
    domain: str | None = None,
    seed: int = 0,
    threshold: float | None = None,
) -> Scores:
    """Re-score saved per-sample files (a run's `samples.jsonl`, a benchmark's own score files, or results files),
    as `rmbench-client score` does. `domain`: RM-Bench's domain for records that carry none; `threshold`: a process
    benchmark's step threshold.

    Raises:
        DataError: a file is unreadable or not a score file (names the file and record).
    """
    from .blas_threads import few_blas_threads
    from .score_files import summarize

    files = [paths] if isinstance(paths, str | Path) else list(paths)
    if not files:
        raise DataError("rescore needs at least one score file")
    with few_blas_threads():
        summary = summarize([str(p) for p in files], domain, seed=seed, threshold=threshold)
    return scores_of(read_summary(summary, ", ".join(map(str, files))))


def compare(runs: Sequence[str | Path], *, seed: int = C.BOOTSTRAP_SEED) -> Comparison:
    """Runs of one benchmark (run directories or summary files; the first is the reference) side by side, as
    `rmbench-client compare` shows them: compare's headline numbers with their intervals, whether each run is
    complete, and each later run's paired differences against the first (with their 95% intervals and p-values;
    `seed`: the resampling's) where its samples.jsonl allows the test.

    Raises:
        TypeError: `runs` is one path, not a sequence of them.
        DataError: a path is no run, or the runs are of different benchmarks.
    """
    from .comparison import compared, load_runs, notes

    if isinstance(runs, str | Path):
        raise TypeError(f"compare takes a sequence of runs, not one path: compare([{str(runs)!r}, ...])")
    loaded = load_runs(list(runs))
    paired, why_not = compared(loaded, seed=seed)
    scores = [scores_of(run.summary) for run in loaded]
    columns = tuple(dict.fromkeys(c for s in scores for c, e in s.headlines.items() if e.value is not None))
    return Comparison(
        benchmark=scores[0].benchmark,
        columns=columns,
        models=tuple(run.name for run in loaded),
        rows=tuple({c: s.headlines.get(c, Estimate(None)) for c in columns} for s in scores),
        complete=tuple(bool(run.summary.info.complete) for run in loaded),
        differences=paired.differences if paired else (),
        shared=paired.shared if paired else None,
        left_out=paired.left_out if paired else (),
        notes=(*notes(loaded), *why_not),
    )


__all__ = [
    "ConfigSource",
    "compare",
    "load_config",
    "evaluate",
    "evaluate_async",
    "evaluate_suite",
    "evaluate_suite_async",
    "rescore",
    "with_checkpoint",
]
