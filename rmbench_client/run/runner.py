"""One evaluation run: dataset -> units not yet stored -> model kind -> durable store -> samples.jsonl -> summary.

The prompts are scored in this process or, with `client.workers` above 1, in worker processes (scoring_loop.py,
workers.py). Every run ends: when all prompts are done; when a role's endpoints stay down past the patience; on
SIGINT or SIGTERM (interrupts.py), in its start-up checks too. Nothing in the run directory is touched until the
start-up checks have passed; from then on, whatever ends the run (a signal, an outage, an error found late, a bug),
the outputs are rewritten from what is scored and the summary says whether the result is complete and, if not, why.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec

from .. import constants as C
from ..atomic_write import replacing, write_atomic
from ..benchmarks import registry as benchmarks
from ..benchmarks.spec import Benchmark, RunMeta
from ..blas_threads import few_blas_threads
from ..config.loading import dump_config
from ..config.schema import RunConfig
from ..datasets import Dataset, load_dataset
from ..errors import ConfigError, RmbError, StorageError
from ..examples import Example, PromptScores, response_lengths
from ..pool.provenance import cross_release, tally
from ..redaction import hidden, masked_url
from ..results.run_directory import RunDirectory, reporting
from ..results.summary import RunFacts, run_info
from . import event_loop, workers
from .interrupts import RunSignals
from .score_store import OpenRun, ScoreStore
from .scoring_loop import Outcome, Spread, sample_line, score_examples

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    out_dir: Path
    summary: dict[str, Any]  # what summary.json holds
    failures: dict[str, str]
    sent_sequences: int = 0
    aborted: str | None = None
    signal: signal.Signals | None = None
    examples: list[Example] = field(default_factory=list)  # the prompts of the run, as loaded (the report page's)
    changes: list[str] = field(default_factory=list)  # endpoints whose server changed during the run

    @property
    def all_scored(self) -> bool:
        """Every prompt of the run was scored, and no server changed under it (the exit code is 0 only then)."""
        return not self.failures and self.aborted is None and not self.changes


class RunFiles(OpenRun):
    """The run directory's files, touched only once the servers have passed the start-up checks: a run that
    cannot reach its servers, or is given the wrong model, leaves the previous run's outputs as they were. The
    earlier outputs stay until this run's replace them (`write_outputs`)."""

    def __init__(self, run_dir: RunDirectory, cfg: RunConfig, fresh: bool, definition: str = "") -> None:
        super().__init__()
        self.run_dir, self.cfg, self.fresh, self.definition = run_dir, cfg, fresh, definition

    def start(self, touch: Callable[[], None]) -> tuple[ScoreStore, IO[str]]:
        """With `fresh` remove the store, write the config, open the store and the progress file; `touch()` just
        before the first change (it raises when the run must not begin)."""
        path = self.run_dir.path / C.STORE_FILE
        if not self.fresh:  # a store this code cannot read (or open: a full disk) is refused before any change
            self.store = ScoreStore(path)
        # the config written in full before the run begins, renamed into place once it has: a directory that
        # cannot be written (a full disk) ends the run here with nothing changed, --fresh's store included
        # a benchmark's file is kept beside its outputs, which are read again by it (and the config names the copy)
        copy = self.run_dir.path / C.DEFINITION_FILE if self.definition else None
        with (
            reporting(self.run_dir.path, f"writing {C.CONFIG_FILE}"),
            replacing(self.run_dir.path / C.CONFIG_FILE) as tmp,
        ):
            tmp.write_text(dump_config(self.cfg, copy.resolve() if copy else None), encoding="utf-8")
            touch()
            if copy is not None:
                write_atomic(copy, Path(self.definition).read_bytes())
        samples = self.run_dir.begin(self.fresh)
        self.samples = samples
        if self.store is None:
            self.store = ScoreStore(path)
        return self.store, samples


def stopped_by(exc: BaseException) -> str:
    """The summary's reason for a run that an error stopped after it began."""
    if isinstance(exc, RmbError):
        return f"stopped by an error: {exc}"
    if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError):  # the caller's, where it handles its signals
        return f"interrupted ({type(exc).__name__})"
    return f"stopped by an unexpected error: {type(exc).__name__}: {exc}"


def unwritten(directory: Path, exc: StorageError, first: BaseException | None, aborted: str | None) -> str:
    """The one line for outputs that could not be written: what stopped the run first, when something did (a store
    that could not be written on the same full disk, in this process or a worker), then this, and what is kept."""
    kept = (f"{directory} keeps the earlier run's outputs, the store every score committed; the same command "
            "resumes once it can write")  # fmt: skip
    cause = str(first) if isinstance(first, StorageError) else aborted  # a worker's error is in `aborted`
    if cause:
        return f"{cause}; the outputs could not be written either ({exc}): {kept}"
    return f"{exc}: {kept}"


def load_examples(cfg: RunConfig, bench: Benchmark[Any]) -> tuple[Dataset, list[Example]]:
    refused = cfg.fits(bench.process, bool(bench.prm_functions))  # before the data is read or a server asked
    if refused:
        raise ConfigError(f"benchmark {bench.name}: {refused}")
    dataset = load_dataset(bench, cfg.data, cfg.data_fields)
    return dataset, dataset.examples[: cfg.limit] if cfg.limit is not None else dataset.examples


def run(
    cfg: RunConfig,
    fresh: bool = False,
    progress: bool = True,
    heatmaps: bool = True,
    signals: RunSignals | None = None,
) -> RunResult:
    """The whole run, synchronously (the CLI entry). The benchmark is resolved here, once, and passed down.
    `signals` (default: a `RunSignals()` that handles SIGINT and SIGTERM) is how the run is stopped from outside.
    `Interrupted` when a signal ended it before it touched the run directory (CancelledError when `signals.stop`
    did); an error that stopped it later is raised again once the outputs are written."""
    bench = benchmarks.get(cfg.benchmark)
    event_loop.loop_factory()  # an unknown RMBENCH_EVENT_LOOP is refused before the run directory is touched
    signals = signals if signals is not None else RunSignals()
    with signals:
        dataset, examples = load_examples(cfg, bench)
        if signals.stopped:  # while the data loaded: a signal held for this thread (`held`), none raised here, or
            raise signals.not_begun()  # a stop (the caller's Ctrl-C or cancel): ended before the directory
        with RunDirectory(cfg.out_dir()) as run_dir:
            files = RunFiles(run_dir, cfg, fresh, bench.definition)
            outcome = Outcome()
            error: BaseException | None = None
            spread: Spread | None = None  # several scoring processes (workers.py)
            if cfg.client.workers > 1:
                spread = functools.partial(workers.score, cfg, bench, run_dir.path)
            try:
                event_loop.run(score_examples(cfg, bench, examples, files, progress, signals, outcome, spread))
            except BaseException as exc:  # whatever it is, what was scored is written first
                if not signals.touched:  # the directory is as it was
                    if signals.signal is not None and isinstance(exc, asyncio.CancelledError):
                        raise signals.not_begun() from None  # a signal held for this thread (`held`)
                    raise
                error = exc
                outcome.aborted = outcome.aborted or stopped_by(exc)
            finally:
                files.close()
            if not signals.touched:  # only a signal or a stop ends a run quietly before it begins
                raise signals.not_begun()
            for warning in outcome.warnings:
                log.warning("%s", warning)
            facts = RunFacts(cfg, bench, dataset, examples, outcome.failures, outcome.warnings, outcome.identity,
                             outcome.aborted, outcome.changes, outcome.failed_at, outcome.taken_out)  # fmt: skip
            try:
                with few_blas_threads():  # the scoring's numpy work
                    summary = write_outputs(run_dir, bench, facts, outcome.scores, heatmaps)
            except StorageError as exc:  # a full disk: the first cause first, and what is kept
                raise StorageError(unwritten(run_dir.path, exc, error, outcome.aborted)) from None
    if error is not None:
        raise error
    ended_by = outcome.signal or signals.signal  # the latter: one that came while the outputs were written
    return RunResult(
        run_dir.path, summary, outcome.failures, outcome.sent, outcome.aborted, ended_by, examples, outcome.changes
    )


def failure_record(rid: str, reason: str, endpoint: str | None) -> dict[str, str]:
    """A line of failures.jsonl: the prompt, why (no URL's credentials in it: redaction.py), and the endpoint of
    its last failed request where one was."""
    return {"id": rid, "reason": hidden(reason)} | ({"endpoint": masked_url(endpoint)} if endpoint else {})


def write_outputs(
    run_dir: RunDirectory,
    bench: Benchmark[Any],
    facts: RunFacts,
    by_id: dict[str, PromptScores],
    heatmaps: bool = True,
) -> dict[str, Any]:
    """samples.jsonl in dataset order, failures.jsonl, summary.json (the benchmark's numbers, then the run's
    facts) and the benchmark's own files; summary.json's object."""
    examples = {ex.id: ex for ex in facts.examples}
    scores = [by_id[ex.id] for ex in facts.examples if ex.id in by_id]
    failures = "".join(json.dumps(failure_record(rid, r, facts.failed_at.get(rid))) + "\n"
                       for rid, r in facts.failures.items())  # fmt: skip
    lengths = response_lengths(facts.examples)  # for the style-bias diagnostics
    options: dict[str, Any] = {"threshold": facts.cfg.prm.threshold} if bench.process else {}
    if bench.prm_functions and facts.cfg.type == "prm":  # responses scored step by step: how each became one
        options["prm_function"] = facts.cfg.prm.aggregation()
    numbers = bench.score(scores, seed=facts.cfg.seed, lengths=lengths, **options) if scores else None
    head = bench.summary_json(numbers) if numbers is not None else {"benchmark": bench.name}
    info = run_info(facts, len(scores))
    if answered := tally(s.answered_by for s in scores):
        info.answered_by = answered
        info.cross_release = sum(cross_release(s.answered_by) for s in scores)
    if facts.cfg.type == "judge":
        from ..model_kinds.judge_answers import run_cost  # a judge run has the HTTP stack loaded already

        if (spent := run_cost(s.details for s in scores)) is not None:
            info.judge_cost = spent  # what the judge spent on the verdicts in this result (reused ones too)
    summary: dict[str, Any] = head | msgspec.to_builtins(info)
    outputs = {
        C.SAMPLES_FILE: (sample_line(bench, examples[s.id], s) for s in scores),
        C.FAILURES_FILE: failures,
        C.SUMMARY_FILE: json.dumps(summary, indent=2) + "\n",  # last: the new result is there once it is
    }
    # the earlier page and the benchmark's own files describe the earlier result: they go with it
    run_dir.replace_outputs(outputs, stale=(C.REPORT_FILE, *bench.own_outputs))
    if numbers is not None:
        cfg = facts.cfg
        template = cfg.reward.template if cfg.type == "reward" else cfg.dpo.template
        own = None if template in ("server", "ids") else template  # reward-bench's chat_template: "tokenizer"
        meta = RunMeta(cfg.model, cfg.type, cfg.dpo.reward, own, heatmaps)
        with reporting(run_dir.path, f"writing {bench.title or bench.name}'s own files"):
            bench.write_files(run_dir.path, meta, numbers, examples, scores)
    run_dir.finish()
    return summary
