"""Several scoring processes for one run (`run --workers N`, `client.workers`): when one process's CPU is what
limits a run (many fast endpoints; bench P8), N processes each score a shard of the prompts.

The run's own process does what a one-process run does — the start-up checks, the run directory, the outputs —
and hands the scoring to N worker processes (spawned: each its own interpreter, event loop and connections).
Worker k scores prompts k, k+N, k+2N, ... into the run's one score store (SQLite in WAL mode: each worker's
commits are its own transactions), after its own start-up checks, which must find the models the run checked
(the same epochs, else it stops). An endpoint's requests at once stay within the run's concurrency (N where that
is below N): a worker sends at most max(1, concurrency // N) to each endpoint, and a rate limit is split
evenly. Once the workers have ended, the run reads every result from the store, as a rerun would, and writes one
samples.jsonl and one summary.
A prompt that failed in a worker is a failure of the run (with the worker's reason), retried by the next run; a
prompt a stopped run (a signal, an outage) never tried is no failure: the run's reason says why it stopped.

A signal to the run (Ctrl-C, SIGTERM) is passed to each worker once (workers have their own process group, so a
terminal's Ctrl-C reaches the run alone); a worker stops as a one-process run does, keeping every result it
committed; one that has not left after WORKER_STOP_S is killed (the store holds what it committed). A worker whose
run process has gone (`kill -9`) stops by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import multiprocessing
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..benchmarks.spec import Benchmark
from ..config.schema import RunConfig
from ..examples import Example
from . import event_loop
from .interrupts import RunSignals
from .progress import ProgressBar
from .score_store import OpenRun, ScoreStore, UnitKeys, key_identity
from .scoring_loop import Outcome, Scoring, score_examples

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}  # what stops a run, and its workers with it


def worker_config(cfg: RunConfig, workers: int) -> RunConfig:
    """One worker's config: one process, its share of each endpoint's concurrency and of the rate limit."""
    roles = {name: role.replace(concurrency=max(1, role.concurrency // workers)) for name, role in cfg.roles.items()}
    rate = cfg.client.rate_limit / workers if cfg.client.rate_limit else None
    return cfg.replace(roles=roles, client=cfg.client.replace(workers=1, rate_limit=rate))


def shards(examples: list[Example], workers: int) -> list[list[Example]]:
    """Prompt k, k+N, k+2N, ... to worker k (every domain of a benchmark spread over the workers)."""
    return [s for s in (examples[k::workers] for k in range(workers)) if s]


class _Tally(io.StringIO):
    """A worker's view of the run's progress.jsonl: its lines appended as its prompts finish (what `status` counts;
    the run writes samples.jsonl in dataset order at the end), and counted for the run's progress bar."""

    def __init__(self, path: Path, done: Any) -> None:
        self._file = path.open("a", encoding="utf-8")  # O_APPEND: each flush lands whole after the others' lines
        self._done = done

    def write(self, s: str) -> int:
        self._done.value += 1  # one line per prompt
        return self._file.write(s)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
        super().close()


class _Discard(io.StringIO):
    """Where the run's own collection writes its lines: the outputs are written from its results at the end."""

    def write(self, s: str) -> int:
        return len(s)


class _ShardFiles(OpenRun):
    """What a worker's scoring writes to: the run's store (opened as it is: the run has already cleared what it
    should) and the run's progress.jsonl, appended to."""

    def __init__(self, run_dir: Path, done: Any) -> None:
        super().__init__()
        self.run_dir, self.done = run_dir, done

    def start(self, touch: Callable[[], None]) -> tuple[ScoreStore, _Tally]:
        touch()  # a signal before the worker's checks passed: it writes nothing
        # as it is, without `others_write`: a worker's lookups find the rows there at its open and those its own
        # writes caught up on, so a sequence of two workers' prompts may go out twice (the same value, one row),
        # rather than every lookup first reading what the other workers added
        store = self.store = ScoreStore(self.run_dir / C.STORE_FILE)
        samples = self.samples = _Tally(self.run_dir / C.PROGRESS_FILE, self.done)
        return store, samples


async def _stop_when_orphaned(parent: Connection) -> None:
    """SIGTERM to this worker when the run's process is gone (its end of the pipe closes): the worker then stops
    as it would on a signal, keeping what it committed."""
    loop = asyncio.get_running_loop()
    gone: asyncio.Future[None] = loop.create_future()

    def closed() -> None:
        if not gone.done():
            gone.set_result(None)

    loop.add_reader(parent.fileno(), closed)
    try:
        await gone
        os.kill(os.getpid(), signal.SIGTERM)
    finally:
        loop.remove_reader(parent.fileno())


async def _score_shard(cfg: RunConfig, bench_name: str, examples: list[Example], files: _ShardFiles,
                       parent: Connection, signals: RunSignals) -> Outcome:  # fmt: skip
    watch = asyncio.ensure_future(_stop_when_orphaned(parent))
    outcome = Outcome()
    try:
        bench = benchmarks.get(bench_name)
        await score_examples(cfg, bench, examples, files, False, signals, outcome)
    finally:
        watch.cancel()
    return outcome


def _work(cfg: RunConfig, bench_name: str, examples: list[Example], run_dir: Path, done: Any,
          report: Connection, parent: Connection) -> None:  # fmt: skip
    """A worker process: score a shard into the store, then send the run what the shard's outcome was."""
    os.setpgrp()  # a terminal's Ctrl-C reaches the run alone, which passes it on once
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # held since the run started it (_start)
    files = _ShardFiles(run_dir, done)
    found: dict[str, Any] = {}
    try:
        with RunSignals() as signals:  # a signal stops the worker as it stops a one-process run
            outcome = event_loop.run(_score_shard(cfg, bench_name, examples, files, parent, signals))
        found = {"failures": outcome.failures, "sent": outcome.sent, "aborted": outcome.aborted,
                 "identity": outcome.identity, "failed_at": outcome.failed_at, "changes": outcome.changes,
                 "taken_out": outcome.taken_out}  # fmt: skip
    except KeyboardInterrupt:  # a signal before the worker's event loop took over: nothing was stored yet
        found = {"aborted": "interrupted"}
    except Exception as exc:  # a start-up check that failed here (a config error, an endpoint's answer)
        found = {"error": str(exc) or type(exc).__name__}
    finally:
        files.close()
        with contextlib.suppress(OSError):
            report.send(found)


@dataclass
class _Worker:
    index: int
    process: Any  # multiprocessing's SpawnProcess
    report: Connection
    alive: Connection  # the run's end of the pipe whose closing tells the worker the run is gone
    done: Any  # shared counter: prompts this worker finished
    found: dict[str, Any] | None = field(default=None)

    def poll(self) -> bool:
        """Whether the worker has ended; its report is read once it is there."""
        ended = self.process.exitcode is not None  # looked at first: whatever it sent before is in the pipe
        with contextlib.suppress(EOFError, OSError):
            if self.found is None and self.report.poll():
                self.found = self.report.recv()
        return ended


def _start(cfg: RunConfig, bench: Benchmark[Any], parts: list[list[Example]], run_dir: Path) -> list[_Worker]:
    ctx = multiprocessing.get_context("spawn")  # never fork a process with an event loop and threads
    one = worker_config(cfg, len(parts))
    started = []
    for k, part in enumerate(parts):
        done = ctx.RawValue("q", 0)
        report_recv, report_send = ctx.Pipe(duplex=False)
        alive_recv, alive_send = ctx.Pipe(duplex=False)
        # a benchmark defined in a file is read again from it in the worker (a spawned interpreter knows no other)
        args = (one, bench.definition or bench.name, part, run_dir, done, report_send, alive_recv)
        process = ctx.Process(target=_work, args=args, name=f"rmbench-worker-{k}")
        # The worker starts with the stop signals held until it is in its own process group: a Ctrl-C to the
        # terminal's group while it is still importing would stop it half-started, and the run's write of its
        # start-up data could then wait on it for good. Held here, a signal waits, for the run and the worker alike.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        report_send.close()
        alive_recv.close()
        started.append(_Worker(k, process, report_recv, alive_send, done))
    return started


async def _wait(workers: list[_Worker], bar: ProgressBar) -> None:
    shown = 0
    while True:
        ended = [w.poll() for w in workers]
        done = sum(w.done.value for w in workers)
        bar.advance(done - shown)
        shown = done
        if all(ended):
            return
        await asyncio.sleep(C.WORKER_POLL_S)


async def _stop(workers: list[_Worker], sig: signal.Signals) -> None:
    """Pass the run's signal on once; kill what has not left after WORKER_STOP_S."""
    for w in workers:
        if w.process.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.process.pid, sig)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + C.WORKER_STOP_S
    while not all(w.poll() for w in workers) and loop.time() < deadline:
        await asyncio.sleep(C.WORKER_POLL_S / 4)
    for w in workers:
        if w.process.is_alive():
            w.process.kill()
        w.process.join()


def _merge(workers: list[_Worker], outcome: Outcome, interrupted: bool) -> None:
    """The workers' failures, requests sent and reasons to stop, into the run's outcome. Interrupted, the run's
    own reason (its signal) is the one that counts: a worker's, stopped by it, is not."""
    for w in workers:
        found = w.found or {}
        outcome.sent += found.get("sent", 0)
        for rid, reason in (found.get("failures") or {}).items():
            outcome.failures.setdefault(rid, reason)
        outcome.failed_at |= found.get("failed_at") or {}
        outcome.changes += [f"worker {w.index}: {said}" for said in found.get("changes") or []]
        outcome.taken_out += [f"worker {w.index}: {said}" for said in found.get("taken_out") or []]
        if interrupted:
            continue
        if (error := found.get("error")) is not None:
            outcome.aborted = outcome.aborted or f"worker {w.index}: {error}"
        elif found.get("identity") and key_identity(found["identity"]) != key_identity(outcome.identity):
            # by epochs, as the store keys them: each process's probe fingerprint differs in its last bits
            outcome.aborted = outcome.aborted or (
                f"worker {w.index} found other models than the run's start-up checks (a server changed during "
                "the run): its results are not used"
            )
        elif (aborted := found.get("aborted")) is not None:
            outcome.aborted = outcome.aborted or aborted
        elif not found:
            outcome.aborted = outcome.aborted or f"worker {w.index} ended (exit {w.process.exitcode}) without a word"


async def score(
    cfg: RunConfig,
    bench: Benchmark[Any],
    run_dir: Path,
    scoring: Scoring,
    examples: list[Example],
    outcome: Outcome,
    progress: bool,
) -> None:
    """Score `examples` in cfg.client.workers processes, then finish every prompt the store completes (as a
    rerun would); cancelled (a signal), the workers are stopped first and the prompts they completed are kept.
    The run's `scoring_loop.Spread` once given its first three arguments."""
    workers = _start(cfg, bench, shards(examples, cfg.client.workers), run_dir)
    interrupted = False
    try:
        with ProgressBar(len(examples), progress) as bar:
            await _wait(workers, bar)
    except asyncio.CancelledError:
        interrupted = True
        await _stop(workers, outcome.signal or signal.SIGTERM)
        raise
    finally:
        if not interrupted:
            await _stop(workers, signal.SIGTERM)  # an error here: no worker outlives the run
        for w in workers:
            w.alive.close()
            w.report.close()
        _merge(workers, outcome, interrupted)
        _collect(scoring, examples, outcome, interrupted)


def _collect(scoring: Scoring, examples: list[Example], outcome: Outcome, interrupted: bool) -> None:
    """Every prompt the store completes goes into the run's results; the others stay unscored: untried, when the
    run was interrupted or stopped (the reason says so), else failures of their worker."""
    scoring.store.others_write()
    scoring.keys = UnitKeys(outcome.identity)  # as `Scoring.run` keys them
    scoring.samples = _Discard()  # the workers' lines stay as they are until the outputs are written
    for ex, _, _ in scoring.pending(examples, outcome, ProgressBar(0, False)):
        if not interrupted and outcome.aborted is None and ex.id not in outcome.failures:
            outcome.failures[ex.id] = "not scored by its worker"
