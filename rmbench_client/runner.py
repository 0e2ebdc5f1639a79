"""One evaluation run: dataset -> units not yet stored -> model kind -> durable store -> samples.jsonl -> summary.

A prompt's units go out together (prefix-cache friendly), results are committed to the store as they arrive, and
a prompt's line is appended to `samples.jsonl` once all its units are scored. Every run ends: when all prompts are
done; when a role's endpoints stay down past the patience; on SIGINT or SIGTERM (interrupts.py), in its start-up
checks too. Nothing in the run directory is touched until the start-up checks have passed; from then on, whatever
ends the run (a signal, an outage, an error found late, a bug), the outputs are rewritten from what is scored and
the summary says whether the result is complete and, if not, why.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec
import orjson

from . import constants as C
from . import event_loop, workers
from .benchmarks import registry as benchmarks
from .benchmarks.spec import Benchmark, RunMeta
from .config import RunConfig, dump_config
from .datasets import Dataset, load_dataset
from .errors import ConfigError, EndpointError, RetryableError, RmbError, SampleError
from .examples import Example, PromptScores, response_lengths
from .interrupts import Interrupted, RunSignals
from .model_kinds.base import ModelKind, Unit
from .progress import ProgressBar
from .run_directory import RunDirectory
from .score_store import OpenRun, ScoreStore, UnitKeys
from .summary import RunFacts, run_info

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What scoring produced, however it ended."""

    scores: dict[str, PromptScores] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # example id -> reason
    sent: int = 0  # units sent to servers
    warnings: list[str] = field(default_factory=list)
    identity: dict[str, Any] = field(default_factory=dict)
    aborted: str | None = None  # why the run stopped before every prompt was tried
    signal: signal.Signals | None = None


@dataclass
class RunResult:
    out_dir: Path
    summary: dict[str, Any]  # what summary.json holds
    failures: dict[str, str]
    sent_sequences: int = 0
    aborted: str | None = None
    signal: signal.Signals | None = None

    @property
    def all_scored(self) -> bool:
        """Every prompt of the run was scored (the exit code is 0 only then)."""
        return not self.failures and self.aborted is None


def prompt_scores(model: ModelKind, ex: Example, values: list[Any]) -> PromptScores:
    values = model.merge(values)
    if model.process:  # one raw value: the steps' scores (fewer than the steps when the input was cut)
        steps = tuple(float(v) for v in values[0])
        details = model.details(ex, values)
        return PromptScores(ex.id, ex.group, (), (), steps=steps, step_labels=ex.step_labels, details=details)
    scores = tuple(model.reduce(v) for v in values)
    details = model.details(ex, values)
    if model.pairwise:
        return PromptScores(ex.id, ex.group, (), (), results=scores, pairs=ex.pairs, details=details)
    n = len(ex.chosen)
    return PromptScores(ex.id, ex.group, scores[:n], scores[n:], pairs=ex.pairs, details=details)


def sample_line(bench: Benchmark, ex: Example, scores: PromptScores) -> str:
    line = bench.sample_line(ex, scores)
    if scores.details is not None:
        line["details"] = scores.details
    return orjson.dumps(line).decode() + "\n"  # several times faster than json.dumps; scores are never NaN


def epoch_identity(identity: dict[str, Any], store: ScoreStore, record: bool = True) -> dict[str, Any] | None:
    """The identity with each role's (served model, fingerprint) replaced by its epoch in this store; with
    `record` False (a dry run) None when the store has never seen one of the models."""
    models = {}
    for role, m in identity.get("models", {}).items():
        find = store.model_epoch if record else store.known_epoch
        epoch = find(role, m["served"], m["fingerprint"])
        if epoch is None:
            return None
        models[role] = {"served": m["served"], "epoch": epoch}
    return identity | {"models": models} if models else identity


class _Scoring:
    """Scores the examples of one run with `in_flight` prompts at a time, in dataset order."""

    def __init__(self, model: ModelKind, bench: Benchmark, store: ScoreStore, samples: IO[str]) -> None:
        self.model = model
        self.bench = bench
        self.store = store
        self.samples = samples
        self.keys = UnitKeys(None)

    def keyed(self, ex: Example) -> tuple[list[Unit], list[str]]:
        """The prompt's units (rendered once: templating is a large part of the client's work) and their keys."""
        units = self.model.units(ex)
        return units, [self.keys.of(u.material, u.role) for u in units]

    async def run(self, examples: list[Example], outcome: Outcome, progress: bool, in_flight: int) -> None:
        self.keys = UnitKeys(outcome.identity)
        with ProgressBar(len(examples), progress) as bar:
            # shared by the workers; it renders and keys a chunk of prompts at a time, so a large dataset's
            # rendered texts are never all held at once
            queue = self._pending(examples, outcome, bar)

            async def worker() -> None:
                for ex, units, keys in queue:  # each worker takes the next prompt when it is free
                    await self._one(ex, units, keys, outcome)
                    bar.advance()

            tasks = [asyncio.ensure_future(worker()) for _ in range(max(1, min(in_flight, len(examples))))]
            try:
                done_tasks, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                for task in done_tasks:
                    task.result()  # the first error that stops the run (an outage, a wrong key)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    def _pending(
        self, examples: list[Example], outcome: Outcome, bar: ProgressBar
    ) -> Iterator[tuple[Example, list[Unit], list[str]]]:
        """The prompts with units not yet stored, a chunk at a time; those already complete in the store are
        finished here."""
        for chunk in _chunks(examples, C.PROMPTS_PER_STORE_READ):
            keyed = []
            for ex in chunk:
                try:
                    keyed.append((ex, *self.keyed(ex)))
                except ConfigError as exc:  # e.g. a chat template that refuses this conversation
                    outcome.failures[ex.id] = str(exc)
            done = self.store.get_many(k for _, _, keys in keyed for k in keys)
            todo = []
            for ex, units, keys in keyed:
                if all(k in done for k in keys):
                    self._finish(ex, [done[k] for k in keys], outcome)
                    bar.advance()
                else:
                    todo.append((ex, units, keys))
            self.samples.flush()
            yield from todo

    async def _one(self, ex: Example, units: list[Unit], keys: list[str], outcome: Outcome) -> None:
        stored = self.store.get_many(keys)  # a prompt sharing units with one scored earlier reuses them
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)  # a unit repeated within the prompt goes out once
        todo = [i for k, i in first.items() if k not in stored]
        try:
            fresh = await self.model.score(ex, [units[i] for i in todo])
        except (SampleError, RetryableError) as exc:  # retryable: it outlived its retries
            outcome.failures[ex.id] = str(exc)
            log.info("prompt %s failed: %s", ex.id, exc)
            return
        new = {keys[i]: value for i, value in zip(todo, fresh, strict=True)}
        self.store.put_many(new)
        outcome.sent += len(todo)
        self._finish(ex, [new.get(k, stored.get(k)) for k in keys], outcome)
        self.samples.flush()

    def _finish(self, ex: Example, values: list[Any], outcome: Outcome) -> None:
        scores = prompt_scores(self.model, ex, values)
        outcome.scores[ex.id] = scores
        self.samples.write(sample_line(self.bench, ex, scores))


def _chunks(items: list[Example], size: int) -> Iterator[list[Example]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def in_flight(cfg: RunConfig) -> int:
    """How many prompts to score at once: a few per request slot of the run's endpoints."""
    slots = sum(cfg.roles[name].endpoint_count() * cfg.roles[name].concurrency for name in cfg.roles_used())
    return max(1, slots * C.PROMPTS_IN_FLIGHT_PER_SLOT)


class RunFiles(OpenRun):
    """The run directory's files, touched only once the servers have passed the start-up checks: a run that
    cannot reach its servers, or is given the wrong model, leaves the previous run's outputs as they were."""

    def __init__(self, run_dir: RunDirectory, cfg: RunConfig, fresh: bool, own: Sequence[str] = ()) -> None:
        super().__init__()
        self.run_dir, self.cfg, self.fresh, self.own = run_dir, cfg, fresh, own

    def start(self, touch: Callable[[], None]) -> tuple[ScoreStore, IO[str]]:
        """Clear the derived outputs (with `fresh` the store too), write the config, open the store and samples;
        `touch()` just before the first change (it raises when the run must not begin)."""
        path = self.run_dir.path / C.STORE_FILE
        if not self.fresh:  # a store this code cannot read is refused before anything is cleared
            self.store = ScoreStore(path)
        touch()
        self.run_dir.clear(self.fresh, self.own)
        self.run_dir.write_text(C.CONFIG_FILE, dump_config(self.cfg))
        if self.store is None:
            self.store = ScoreStore(path)
        samples = (self.run_dir.path / C.SAMPLES_FILE).open("w", encoding="utf-8")
        self.samples = samples
        return self.store, samples


async def score_examples(
    cfg: RunConfig,
    bench: Benchmark,
    examples: list[Example],
    files: RunFiles,
    progress: bool,
    signals: RunSignals,
    outcome: Outcome,
) -> None:
    """Score every example into `outcome`. A signal cancels this task, in the start-up checks as in the scoring;
    the run directory is touched (`files.start`) only once the checks have passed with no signal. An outage stops
    the scoring; any other error propagates, `outcome` holding what was scored until then."""
    from .model_kinds.factory import open_model_kind  # imported here: pulls in the HTTP stack

    signals.cancels(asyncio.current_task())
    try:
        async with open_model_kind(cfg, bench.judge_mode, bench.process) as model:
            if model.process != bench.process:  # a kind cfg.fits did not foresee
                raise ConfigError(f"model type {cfg.type} cannot score benchmark {bench.name}")
            store, samples = files.start(signals.touch)
            outcome.identity = epoch_identity(model.identity, store) or {}
            scoring = _Scoring(model, bench, store, samples)
            try:
                if cfg.client.workers > 1:  # several scoring processes (workers.py)
                    await workers.score(cfg, bench, examples, scoring, outcome, progress, files.run_dir.path)
                else:
                    await scoring.run(examples, outcome, progress, in_flight(cfg))
            except EndpointError as exc:  # every endpoint of a role down past the patience, a rejected key
                outcome.aborted = str(exc)
            finally:
                outcome.warnings = list(model.warnings)
    except asyncio.CancelledError:
        if signals.signal is None:
            raise
        outcome.signal = signals.signal
        if len(outcome.scores) + len(outcome.failures) < len(examples):  # not a signal just after the last prompt
            outcome.aborted = outcome.aborted or signals.reason
    finally:
        signals.cancels(None)


def stopped_by(exc: BaseException) -> str:
    """The summary's reason for a run that an error stopped after it began."""
    if isinstance(exc, RmbError):
        return f"stopped by an error: {exc}"
    return f"stopped by an unexpected error: {type(exc).__name__}: {exc}"


def load_examples(cfg: RunConfig, bench: Benchmark) -> tuple[Dataset, list[Example]]:
    refused = cfg.fits(bench.process)  # before the data is read or a server asked
    if refused:
        raise ConfigError(f"benchmark {bench.name}: {refused}")
    dataset = load_dataset(bench, cfg.data, cfg.data_fields)
    return dataset, dataset.examples[: cfg.limit] if cfg.limit is not None else dataset.examples


def run(cfg: RunConfig, fresh: bool = False, progress: bool = True, heatmaps: bool = True) -> RunResult:
    """The whole run, synchronously (the CLI entry). The benchmark is resolved here, once, and passed down.
    `Interrupted` when a signal ended it before it touched the run directory; an error that stopped it later is
    raised again once the outputs are written."""
    bench = benchmarks.get(cfg.benchmark)
    with RunSignals() as signals:
        dataset, examples = load_examples(cfg, bench)
        with RunDirectory(cfg.out_dir()) as run_dir:
            files = RunFiles(run_dir, cfg, fresh, bench.own_outputs)
            outcome = Outcome()
            error: BaseException | None = None
            try:
                event_loop.run(score_examples(cfg, bench, examples, files, progress, signals, outcome))
            except BaseException as exc:  # whatever it is, what was scored is written first
                if not signals.touched:
                    raise  # the directory is as it was
                error = exc
                outcome.aborted = outcome.aborted or stopped_by(exc)
            finally:
                files.close()
            if not signals.touched:
                assert signals.signal is not None  # only a signal ends a run quietly before it begins
                raise Interrupted(signals.signal)
            for warning in outcome.warnings:
                log.warning("%s", warning)
            facts = RunFacts(
                cfg, bench, dataset, examples, outcome.failures, outcome.warnings, outcome.identity, outcome.aborted
            )
            summary = write_outputs(run_dir, bench, facts, outcome.scores, heatmaps)
    if error is not None:
        raise error
    ended_by = outcome.signal or signals.signal  # the latter: one that came while the outputs were written
    return RunResult(run_dir.path, summary, outcome.failures, outcome.sent, outcome.aborted, ended_by)


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
    run_dir.write_text(C.SAMPLES_FILE, (sample_line(bench, examples[s.id], s) for s in scores))
    failures = "".join(json.dumps({"id": rid, "reason": r}) + "\n" for rid, r in facts.failures.items())
    run_dir.write_text(C.FAILURES_FILE, failures)
    lengths = response_lengths(facts.examples)  # for the style-bias diagnostics
    options = {"threshold": facts.cfg.prm.threshold} if bench.process else {}  # a process benchmark's only option
    numbers = bench.score(scores, seed=facts.cfg.seed, lengths=lengths, **options) if scores else None
    head = bench.summary_json(numbers) if numbers is not None else {"benchmark": bench.name}
    info = run_info(facts, len(scores))
    if facts.cfg.type == "judge":
        from .model_kinds.judge_answers import run_cost  # a judge run has the HTTP stack loaded already

        if (spent := run_cost(s.details for s in scores)) is not None:
            info.judge_cost = spent  # what the judge spent on the verdicts in this result (reused ones too)
    summary: dict[str, Any] = head | msgspec.to_builtins(info)
    run_dir.write_json(C.SUMMARY_FILE, summary)
    if numbers is not None:
        cfg = facts.cfg
        template = cfg.reward.template if cfg.type == "reward" else cfg.dpo.template
        own = None if template in ("server", "ids") else template  # reward-bench's chat_template: "tokenizer"
        meta = RunMeta(cfg.model, cfg.type, cfg.dpo.reward, own, heatmaps)
        bench.write_files(run_dir.path, meta, numbers, examples, scores)
    return summary
