"""The Python API: run a benchmark or the suite, re-score saved files, compare runs, from a script.

Every function works as the command of the same name does: the same run directories (`runs/<model>/<benchmark>`
unless `out` says otherwise), the same score store (a run again sends only what is missing: resume), the same lock
(a second run into a directory another run holds raises `RunLockedError`). A config is a `RunConfig`, the path of
an evaluation YAML, or a mapping of the same keys; `overrides` sets keys by their dotted names, as the flags do
(`{"roles.reward.endpoints": ["http://127.0.0.1:8000"]}`).

The `*_async` forms are for callers inside an event loop: the run goes to a thread of its own (a run has its own
event loop), and the caller's loop keeps running; cancelling the awaiting task stops the run as Ctrl-C does. The
sync forms work inside a running loop too (the run's loop on a thread while they wait). The caller's process stays
the caller's: its signal handlers get the signals a run caught once its outputs are written (or every signal, with
`handle_signals=False`), its tracker runs stay its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from . import arguments
from .config.loading import config_of
from .config.loading import load_config as _load_yaml_config
from .config.schema import MAIN_ROLE, RunConfig
from .errors import ConfigError, DataError
from .examples import Example
from .report.trackers import Tracker, bind, logged, report_page
from .results.stamp import Origin, call_text, made_by, read_stamp
from .results.typed import (
    BenchmarkResult,
    RunInterrupted,
    SuiteResult,
    in_api_words,
    result_of,
)
from .run import event_loop
from .run.interrupts import Interrupted, RunSignals

ConfigSource = RunConfig | str | Path | Mapping[str, Any]
"""A run's config: a `RunConfig`, an evaluation YAML's path, or a mapping of its keys."""
_R = TypeVar("_R", BenchmarkResult, SuiteResult)


def load_config(source: ConfigSource, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    """The checked config of `source`, with `overrides` (dotted keys, None values ignored) applied over it, as the
    command line applies its flags (`config.loading.config_of`).

    Raises:
        ConfigError: the file is missing or invalid, or a key is (the message names the file and key).
    """
    changes = dict(overrides or {})
    if isinstance(source, RunConfig):
        if not changes:
            return source
        source = source.to_data(exclude_none=True)
    if not isinstance(source, str | Path | Mapping):
        raise ConfigError(f"a config is a RunConfig, a YAML path or a mapping, not {type(source).__name__}")
    with in_api_words():  # the checks are the command line's too
        if isinstance(source, str | Path):
            return _load_yaml_config(source, changes)
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


@dataclass(frozen=True)
class _Finished:
    result: BenchmarkResult
    signal: signal.Signals | None
    examples: list[Example]
    began: bool = True  # False: a signal came before the run touched its directory


def _run(cfg: RunConfig, fresh: bool, progress: bool, heatmaps: bool, signals: RunSignals | None) -> _Finished:
    from .run.runner import run

    done = run(cfg, fresh=fresh, progress=progress, heatmaps=heatmaps, signals=signals)
    result = result_of(done.out_dir, done.summary, done.failures, done.sent_sequences)
    return _Finished(result, done.signal, done.examples)


def _begun(cfg: RunConfig, fresh: bool, progress: bool, heatmaps: bool, signals: RunSignals) -> _Finished:
    """`_run`, where a signal before the run began (its data loading, its servers' checks) is handed on as one
    during the scoring is: an aborted result with nothing scored, the run directory as it was. So is a stop then
    (the caller's Ctrl-C or cancel reaching a run on a thread of its own), with no signal to hand on."""
    try:
        return _run(cfg, fresh, progress, heatmaps, signals)
    except Interrupted as exc:
        return _Finished(_not_begun(cfg, str(exc)), exc.signal, [], began=False)
    except asyncio.CancelledError:
        if signals.cancelled is None or signals.touched:  # not a stop of this run's, or one after it began
            raise
        return _Finished(_not_begun(cfg, signals.cancelled), None, [], began=False)


def _not_begun(cfg: RunConfig, reason: str) -> BenchmarkResult:
    out = cfg.out_dir()
    why = f"{reason} before the run began: nothing in {out} was changed"
    from .benchmarks.registry import name_of

    summary = {"benchmark": name_of(cfg.benchmark), "model": cfg.model, "complete": False, "scored": 0, "aborted": why}
    return result_of(out, summary, {})


def run_config(
    cfg: RunConfig, *, fresh: bool = False, progress: bool = False, heatmaps: bool = True
) -> tuple[BenchmarkResult, signal.Signals | None]:
    """One run of a checked config, and the signal that ended it (None when none did). What the CLI's `run` and
    `suite` call: the signal is theirs to act on (an exit code)."""
    done = _run(cfg, fresh, progress, heatmaps, None)
    return done.result, done.signal


def _tracked(done: _Finished, trackers: Sequence[Tracker], step: int | None) -> BenchmarkResult:
    """The run's result, logged to the trackers unless it was aborted (its numbers would be over the prompts tried
    before it stopped, a part of the data: the same call resumes it, and logs then)."""
    if not trackers or done.result.status == "aborted":
        return done.result
    return logged(trackers, done.result, step, report_page(done.result, {ex.id: ex for ex in done.examples}))


def _off_loop(job: Callable[[RunSignals], _R], options: arguments.Options) -> _R:
    """`job`, the whole of a sync call, on the caller's thread or off its running loop (`event_loop.off_loop`), the
    trackers bound first in the caller's thread."""
    bind(options.trackers)
    signals = RunSignals(handle=options.handle_signals)
    call = functools.partial(contextvars.copy_context().run, job, signals)  # on a thread too: what made it (stamp)
    return event_loop.off_loop(call, functools.partial(_interrupted, signals), _ended, signals.held)


async def _in_thread(job: Callable[[RunSignals], _R], options: arguments.Options) -> _R:
    """`job`, the whole of an async call, on a thread of its own; cancelled, it is stopped (`event_loop.in_thread`)."""
    bind(options.trackers)  # in the caller's thread, where its active run is
    signals = RunSignals(handle=False)
    call = functools.partial(contextvars.copy_context().run, job, signals)  # what made it (stamp), on the thread
    return await event_loop.in_thread(call, signals.stop)


def _evaluate(cfg: RunConfig, options: arguments.Options, signals: RunSignals) -> BenchmarkResult:
    done = _begun(cfg, options.fresh, options.progress, options.heatmaps, signals)
    result = _tracked(done, options.trackers, options.step)
    if done.signal is not None:  # the outputs are written: the signal goes where it would have gone without the run
        signals.hand_on(done.signal, RunInterrupted(done.signal, result.run_dir, result))
    return result


def _interrupted(signals: RunSignals, exc: BaseException) -> None:
    """The caller's KeyboardInterrupt while its thread waits for a run on another (a running loop's thread), or a
    cancel of its waiting task: the run stops as it would on the signal."""
    signals.stop(f"interrupted ({type(exc).__name__})")


def _ended(exc: BaseException, result: BenchmarkResult | SuiteResult) -> BaseException:
    """What the caller's KeyboardInterrupt becomes once the run it stopped has written its outputs: RunInterrupted
    carrying the result, as Python's SIGINT default gets during a run in the main thread."""
    if not isinstance(exc, KeyboardInterrupt) or isinstance(exc, RunInterrupted):
        return exc
    where = result.run_dir if isinstance(result, BenchmarkResult) else result.directory
    return RunInterrupted(signal.SIGINT, where, result)


def _evaluation(config: ConfigSource, overrides: Mapping[str, Any] | None, **keys: Any) -> RunConfig:
    arguments.paths(data=keys.get("data"), out=keys.get("out"))
    arguments.name(benchmark=keys.get("benchmark"))
    cfg = _overridden(config, **{k: _text(v) if isinstance(v, Path) else v for k, v in keys.items()})
    return _overridden(cfg, **dict(overrides or {}))


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
    trackers: Sequence[Tracker] | Tracker = (),
    step: int | None = None,
    handle_signals: bool = True,
) -> BenchmarkResult:
    """Run one benchmark (default: the config's) through the config's servers, as `rmbench-client run` does, and
    return its result. `fresh` forgets the scores stored by earlier runs in the run directory; each tracker logs
    the result at `step` (a tracker that fails is recorded in `tracker_errors`, never raised; `trackers` is a list
    of trackers, or one). Called where an event
    loop is running (a notebook, `asyncio.run`), the run has a loop of its own on a thread while this call waits;
    Ctrl-C there stops the run (under `asyncio.run`, whose handler only cancels the waiting task, the cancel does),
    and RunInterrupted (with the result) is raised once its outputs are written; SIGTERM is taken by the waiting call
    and handed on as below. `heatmaps`:
    RM-Bench's heatmap PNGs, off by default here (matplotlib costs a checkpoint about 2 s of CPU; `rmbench-client run`
    draws them unless `--no-heatmaps`).

    A run whose servers went away past the patience returns with `status` "aborted": what was scored is kept, and
    the same call resumes it. SIGINT or SIGTERM during the run stop it; once its outputs are written, the signal
    goes to the handler the caller had installed (Python's default for SIGINT raises `RunInterrupted`, a
    KeyboardInterrupt holding the result; a handler of the caller's that returns lets this call return the result).
    A signal before the run began (while its data loads) is handed on alike, with an aborted result that scored
    nothing and the run directory as it was.
    `handle_signals=False` leaves both signals to the caller's handlers while the run goes on.

    Raises:
        TypeError: an argument of the wrong type (`fresh="no"`, `step="x"`, `trackers=None`), named.
        ConfigError: an invalid config or option.
        DataError: the benchmark's data is missing or invalid (names the file and record).
        RunLockedError: another run is writing into the same run directory.
        EndpointError: the servers cannot be used at all (unreachable at start, wrong model, rejected key).
    """
    options, limit = arguments.options(fresh, progress, heatmaps, handle_signals, trackers, step, limit)
    call = call_text("evaluate", config, benchmark=benchmark, data=data, out=out, limit=limit, overrides=overrides,
                     fresh=fresh)  # fmt: skip
    with in_api_words(), made_by(Origin(call=call)):
        cfg = _evaluation(config, overrides, benchmark=benchmark, data=data, out=out, limit=limit)
        return _off_loop(functools.partial(_evaluate, cfg, options), options)


async def evaluate_async(  # evaluate's arguments but for the progress bar and signals, which stay the caller's
    config: ConfigSource, *, benchmark: str | None = None, data: str | Path | None = None,
    out: str | Path | None = None, limit: int | None = None, overrides: Mapping[str, Any] | None = None,
    fresh: bool = False, heatmaps: bool = False, trackers: Sequence[Tracker] | Tracker = (), step: int | None = None,
) -> BenchmarkResult:  # fmt: skip
    """`evaluate` for a caller inside an event loop: the run goes on a thread of its own and the caller's loop keeps
    running (no progress bar; signals stay the caller's). Cancelling the awaiting task (`asyncio.wait_for`'s
    timeout, Ctrl-C under `asyncio.run`) stops the run as Ctrl-C does: within a second its outputs are written,
    saying it was cancelled, and its lock released, before the CancelledError reaches the caller; the same call
    then resumes it."""
    options, limit = arguments.options(fresh, False, heatmaps, False, trackers, step, limit)
    call = call_text("evaluate_async", config, benchmark=benchmark, data=data, out=out, limit=limit,
                     overrides=overrides, fresh=fresh)  # fmt: skip
    with in_api_words(), made_by(Origin(call=call)):
        cfg = _evaluation(config, overrides, benchmark=benchmark, data=data, out=out, limit=limit)
        return await _in_thread(functools.partial(_evaluate, cfg, options), options)


def _planned(base: RunConfig, names: Sequence[str] | None, data_root: str | Path | None) -> None:
    """A benchmark named but not runnable is the caller's mistake: DataError when its data is not there,
    ConfigError when the config's model type cannot score it."""
    from .benchmarks import registry
    from .results.suite import data_root_dir, plan_suite

    if names is None:
        data_root_dir(data_root)  # a root that is not there: refused now, as a named benchmark without data is
        return
    for p in plan_suite(base, names, data_root):
        if p.cfg is None:
            bench = registry.get(p.name)
            refused = base.fits(bench.process, bool(bench.prm_functions))
            if refused:
                raise ConfigError(f"benchmark {p.name}: {refused}")
            raise DataError(f"benchmark {p.name}: {p.missing}")


def _suite(
    base: RunConfig, names: Sequence[str] | None, data_root: str | Path | None, options: arguments.Options,
    signals: RunSignals,
) -> SuiteResult:  # fmt: skip
    from .benchmarks import registry
    from .results.suite import model_dir, run_suite

    results: dict[str, BenchmarkResult] = {}
    ended: list[signal.Signals] = []

    def run_one(cfg: RunConfig) -> str | None:
        done = _begun(cfg, options.fresh, options.progress, options.heatmaps, signals)
        with signals.between():  # a signal while the trackers log stops the suite before its next benchmark
            results[registry.name_of(cfg.benchmark)] = _tracked(done, options.trackers, options.step)
        if done.signal is not None:
            ended.append(done.signal)
        return None if done.began else done.result.aborted

    # once a signal or a cancellation stopped a run, the benchmarks after it are left for the next call
    table, not_run = run_suite(base, names, data_root, run_one, lambda: signals.reason)
    rows = table["results"]
    caught = ended[0] if ended else signals.signal  # the latter: one that came between two runs
    suite = SuiteResult(
        model=base.model,
        directory=model_dir(base),
        results=results,
        missing={n: c["why"] for n, c in rows.items() if c["status"] == "missing" and n not in results},
        errors={n: c["why"] for n, c in rows.items() if c["status"] == "error"},
        not_run={n: why for n, why in not_run.items() if n not in results},  # a signal before it began: aborted
        interrupted_by=caught,
        stamp=read_stamp(table.get("stamp")),
    )
    if caught is not None:
        signals.hand_on(caught, RunInterrupted(caught, suite.directory, suite))
    return suite


def evaluate_suite(  # evaluate's arguments, with the benchmarks and their data's root for its benchmark and data
    config: ConfigSource, *, benchmarks: Sequence[str] | None = None, data_root: str | Path | None = None,
    out: str | Path | None = None, limit: int | None = None, overrides: Mapping[str, Any] | None = None,
    fresh: bool = False, progress: bool = False, heatmaps: bool = False, trackers: Sequence[Tracker] | Tracker = (),
    step: int | None = None, handle_signals: bool = True,
) -> SuiteResult:  # fmt: skip
    """Every benchmark whose data is under `data_root` (default data/, one folder per benchmark as `data fetch`
    lays it out), or those named, as `rmbench-client suite` does: one run directory per benchmark under `out`
    (default runs/<model>), and `suite.md` / `suite.json` there. A benchmark whose data is malformed is in
    `errors`, one without data in `missing` (a benchmark named without data raises DataError before anything
    runs); the others still run. Each tracker (`trackers`: a list of them, or one) logs every benchmark at `step`.
    Signals as in `evaluate`: the benchmarks after the one a signal stopped are left for the next call, in
    `not_run`; a signal between two benchmarks (a tracker logging the one before) stops the suite before the next.

    Raises:
        TypeError: an argument of the wrong type, as in `evaluate`.
        ConfigError: an invalid config, option or benchmark name, or a benchmark named that the model cannot score.
        DataError: a benchmark named has no data under `data_root`.
        RunLockedError, EndpointError: as `evaluate`.
    """
    options, limit = arguments.options(fresh, progress, heatmaps, handle_signals, trackers, step, limit)
    call = call_text("evaluate_suite", config, benchmarks=benchmarks, data_root=data_root, out=out, limit=limit,
                     overrides=overrides, fresh=fresh)  # fmt: skip
    with in_api_words(), made_by(Origin(call=call)):
        base, names = _suite_config(config, benchmarks, data_root, out, limit, overrides)
        return _off_loop(functools.partial(_suite, base, names, data_root, options), options)


def _suite_config(
    config: ConfigSource, benchmarks: Sequence[str] | None, data_root: str | Path | None, out: str | Path | None,
    limit: int | None, overrides: Mapping[str, Any] | None,
) -> tuple[RunConfig, list[str] | None]:  # fmt: skip
    names = arguments.benchmark_names(benchmarks)
    base = _evaluation(config, overrides, out=out, limit=limit)
    _planned(base, names, data_root)
    return base, names


async def evaluate_suite_async(  # evaluate_suite's arguments but for the progress bar and signals
    config: ConfigSource, *, benchmarks: Sequence[str] | None = None, data_root: str | Path | None = None,
    out: str | Path | None = None, limit: int | None = None, overrides: Mapping[str, Any] | None = None,
    fresh: bool = False, heatmaps: bool = False, trackers: Sequence[Tracker] | Tracker = (), step: int | None = None,
) -> SuiteResult:  # fmt: skip
    """`evaluate_suite` for a caller inside an event loop; cancelled, as `evaluate_async` (the benchmarks not yet
    run are left for the next call)."""
    options, limit = arguments.options(fresh, False, heatmaps, False, trackers, step, limit)
    call = call_text("evaluate_suite_async", config, benchmarks=benchmarks, data_root=data_root, out=out,
                     limit=limit, overrides=overrides, fresh=fresh)  # fmt: skip
    with in_api_words(), made_by(Origin(call=call)):
        base, names = _suite_config(config, benchmarks, data_root, out, limit, overrides)
        return await _in_thread(functools.partial(_suite, base, names, data_root, options), options)


__all__ = [
    "ConfigSource",
    "load_config",
    "evaluate",
    "evaluate_async",
    "evaluate_suite",
    "evaluate_suite_async",
    "with_checkpoint",
]
