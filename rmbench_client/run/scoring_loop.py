"""The scoring of a run's prompts, shared by the one-process run (runner.py) and each worker process (workers.py):
the start-up checks through the model kind, then the prompts not yet stored, `in_flight` at a time, in dataset
order. A prompt's units go out together (prefix-cache friendly), results are committed to the store as they
arrive, each with the endpoints that answered it (pool/provenance.py), and a prompt's line is appended to
`samples.jsonl` once all its units are scored. With `client.same_endpoint_per_prompt`, a prompt's requests of a role
stay on one endpoint (pool/pinning.py); should it leave mid-prompt, the prompt is scored again, whole, elsewhere.
When the scoring is done, every endpoint at work is checked once more before the run may call itself complete; the
answers of one that serves another model by then are held apart (score_store.py).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import orjson

from .. import constants as C
from ..benchmarks.spec import Benchmark
from ..config.schema import RunConfig
from ..errors import ConfigError, EndpointError, PinBroken, RetryableError, SampleError
from ..examples import Example, PromptScores
from ..model_kinds.base import ModelKind, SharedRequests, Unit
from ..pool import pinning, provenance
from ..pool.provenance import Record
from ..redaction import masked_url
from .interrupts import RunSignals
from .progress import ProgressBar
from .score_store import OpenRun, ScoreStore, UnitKeys

if TYPE_CHECKING:
    from ..pool.endpoint_pool import EndpointPool

log = logging.getLogger(__name__)
Pending = tuple[Example, list[Unit], list[str]]  # a prompt to score: its units and their store keys


@dataclass
class Outcome:
    """What scoring produced, however it ended."""

    scores: dict[str, PromptScores] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # example id -> reason
    failed_at: dict[str, str] = field(default_factory=dict)  # example id -> the endpoint of its last failed request
    changes: list[str] = field(default_factory=list)  # endpoints whose server changed during the run, in words
    taken_out: list[str] = field(default_factory=list)  # each time an endpoint was taken out during scoring, and why
    sent: int = 0  # units sent to servers
    warnings: list[str] = field(default_factory=list)
    identity: dict[str, Any] = field(default_factory=dict)
    aborted: str | None = None  # why the run stopped before every prompt was tried
    signal: signal.Signals | None = None


def prompt_scores(model: ModelKind, ex: Example, values: list[Any], answered_by: Record = ()) -> PromptScores:
    values = model.merge(values)
    details = model.details(ex, values)
    if model.process and ex.solutions:  # a value per response: its steps' scores, each made one by `reduce`
        scores = tuple(model.reduce(v) for v in values)
        n, steps_of = len(ex.chosen), tuple(tuple(float(x) for x in v) for v in values)
        return PromptScores(ex.id, ex.group, scores[:n], scores[n:], details=details, answered_by=answered_by,
                            response_steps=steps_of, facets=ex.facets)  # fmt: skip
    if model.process:  # one raw value: the steps' scores (fewer than the steps when the input was cut)
        steps = tuple(float(v) for v in values[0])
        return PromptScores(ex.id, ex.group, (), (), steps=steps, step_labels=ex.step_labels, details=details,
                            answered_by=answered_by, facets=ex.facets)  # fmt: skip
    scores = tuple(model.reduce(v) for v in values)
    if model.pairwise:
        return PromptScores(ex.id, ex.group, (), (), results=scores, pairs=ex.pairs, details=details,
                            answered_by=answered_by, facets=ex.facets)  # fmt: skip
    n = len(ex.chosen)
    return PromptScores(ex.id, ex.group, scores[:n], scores[n:], pairs=ex.pairs, details=details,
                        answered_by=answered_by, facets=ex.facets)  # fmt: skip


def sample_line(bench: Benchmark[Any], ex: Example, scores: PromptScores) -> str:
    line = bench.sample_line(ex, scores)
    if scores.details is not None:
        line["details"] = scores.details
    if scores.answered_by:  # which endpoints answered (a baseline's lines have none)
        line["answered_by"] = scores.answered_by
        if provenance.cross_release(scores.answered_by):
            line["cross_release"] = True
    return orjson.dumps(line).decode() + "\n"  # several times faster than json.dumps; scores are never NaN


def epoch_identity(identity: dict[str, Any], store: ScoreStore, record: bool = True) -> dict[str, Any] | None:
    """The identity with each role's model named by its epoch in this store (what the store's keys cover:
    `key_identity`), beside its served identity and the fingerprint the epoch was recorded with (what the summary
    records, the same in every run of that epoch: `reproduce` tells another checkpoint by it); with `record` False
    (a dry run) None when the store has never seen one of the models."""
    models = {}
    for role, m in identity.get("models", {}).items():
        find = store.model_epoch if record else store.known_epoch
        epoch = find(role, m["served"], m["fingerprint"])
        if epoch is None:
            return None
        models[role] = {"served": m["served"], "epoch": epoch, "fingerprint": store.epoch_fingerprint(epoch)}
    return identity | {"models": models} if models else identity


class Scoring:
    """Scores the examples of one run with `in_flight` prompts at a time, in dataset order."""

    def __init__(
        self, model: ModelKind, bench: Benchmark[Any], store: ScoreStore, samples: IO[str], pinned: bool = False
    ) -> None:
        self.model = model
        self.bench = bench
        self.store = store
        self.samples = samples
        self.pinned = pinned  # a prompt's requests of a role stay on one endpoint (client.same_endpoint_per_prompt)
        self.keys = UnitKeys(None)
        self.since = store.mark()  # the rows this run writes come after
        self.fresh: dict[str, Record] = {}  # prompt id -> what answered what this run sent for it

    def keyed(self, ex: Example) -> tuple[list[Unit], list[str]]:
        """The prompt's units (rendered once: templating is a large part of the client's work) and their keys."""
        units = self.model.units(ex)
        return units, [self.keys.of(u.material, u.role) for u in units]

    async def run(self, examples: list[Example], outcome: Outcome, progress: bool, in_flight: int) -> None:
        self.keys = UnitKeys(outcome.identity)
        with ProgressBar(len(examples), progress) as bar:
            # shared by the workers; it renders and keys a chunk of prompts at a time, so a large dataset's
            # rendered texts are never all held at once
            queue = _requests(self.pending(examples, outcome, bar), self._units_per_request())

            async def worker() -> None:
                for batch in queue:  # each worker takes the next request's prompts when it is free
                    await self._batch(batch, outcome)
                    bar.advance(len(batch))

            tasks = [asyncio.ensure_future(worker()) for _ in range(max(1, min(in_flight, len(examples))))]
            try:
                done_tasks, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                for task in done_tasks:
                    task.result()  # the first error that stops the run (an outage, a wrong key)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    def _units_per_request(self) -> int:
        """How many units of consecutive prompts may share a request (0: each prompt goes out on its own)."""
        return self.model.units_per_request if isinstance(self.model, SharedRequests) else 0

    def pending(self, examples: list[Example], outcome: Outcome, bar: ProgressBar) -> Iterator[Pending]:
        """The prompts with units not yet stored, a chunk at a time; those already complete in the store are
        finished here."""
        for chunk in _chunks(examples, C.PROMPTS_PER_STORE_READ):
            keyed = []
            for ex in chunk:
                try:
                    keyed.append((ex, *self.keyed(ex)))
                except ConfigError as exc:  # e.g. a chat template that refuses this conversation
                    outcome.failures[ex.id] = str(exc)
            sources: dict[str, int | None] = {}
            done = self.store.get_many((k for _, _, keys in keyed for k in keys), sources)
            todo = []
            for ex, units, keys in keyed:
                if all(k in done for k in keys):
                    answered = provenance.by_unit([self.store.record(sources[k]) for k in keys])
                    self._finish(ex, [done[k] for k in keys], outcome, answered)
                    bar.advance()
                else:
                    todo.append((ex, units, keys))
            self.samples.flush()
            yield from todo

    async def _batch(self, batch: list[Pending], outcome: Outcome, tries: int = 1) -> None:
        """Score the prompts of one request (a single prompt unless the model kind shares requests): the units not
        stored yet go out once each, their values are committed in one transaction, each with what answered it, then
        each prompt is finished. A batch of several prompts that fails is scored again a prompt at a time, so that a
        prompt fails alone; one whose pinned endpoint left is scored again, whole."""
        keys = [k for _, _, prompt_keys in batch for k in prompt_keys]
        sources: dict[str, int | None] = {}
        stored = self.store.get_many(keys, sources)  # a prompt sharing units with one scored earlier reuses them
        todo: dict[str, Unit] = {}  # a unit repeated within the batch goes out once
        for _, units, prompt_keys in batch:
            for unit, k in zip(units, prompt_keys, strict=True):
                if k not in stored and k not in todo:
                    todo[k] = unit
        error: SampleError | RetryableError | None = None
        with provenance.collect() as answers, pinning.pinned(self.pinned):
            try:
                fresh = await self._score(batch, list(todo.values())) if todo else []
            except (SampleError, RetryableError) as exc:  # retryable: it outlived its retries
                error = exc
        if isinstance(error, PinBroken) and tries < C.PINNED_PROMPT_TRIES:  # nothing of it stored: again, whole
            log.info("%s; scored again on another endpoint", error)
            await self._batch(batch, outcome, tries + 1)
            return
        if error is not None:
            if len(batch) > 1:  # outside the collection: each prompt's own retry collects its own answerers
                await _all(self._batch([one], outcome) for one in batch)
                return
            ex = batch[0][0]
            outcome.failures[ex.id] = str(error)
            if answers.failed is not None:
                outcome.failed_at[ex.id] = answers.failed.url
            log.info("prompt %s failed: %s", ex.id, error)
            return
        answered = {k: provenance.record(answers.of(i, unit.role)) for i, (k, unit) in enumerate(todo.items())}
        new = dict(zip(todo, fresh, strict=True))
        if new:
            self.store.put_many(new, answered)
        outcome.sent += len(new)
        for ex, _, prompt_keys in batch:
            per_unit = [answered[k] if k in new else self.store.record(sources.get(k)) for k in prompt_keys]
            if own := [answered[k] for k in prompt_keys if k in new]:
                self.fresh[ex.id] = provenance.merged(own)
            self._finish(ex, [new[k] if k in new else stored[k] for k in prompt_keys], outcome,
                         provenance.by_unit(per_unit))  # fmt: skip
        self.samples.flush()

    async def _score(self, batch: list[Pending], units: list[Unit]) -> list[Any]:
        if isinstance(self.model, SharedRequests):
            return await self.model.score_units(units)
        (ex, _, _), *rest = batch  # one prompt per request otherwise (`_requests`)
        assert not rest
        return await self.model.score(ex, units)

    def _finish(self, ex: Example, values: list[Any], outcome: Outcome, answered: Record = ()) -> None:
        scores = prompt_scores(self.model, ex, values, answered)
        outcome.scores[ex.id] = scores
        self.samples.write(sample_line(self.bench, ex, scores))

    def hold_apart(self, url: str, outcome: Outcome) -> None:
        """What an endpoint found serving another model at the end answered in this run: its rows held apart in the
        store, its prompts failed (asked again by the next run)."""
        shown = masked_url(url)  # what the outputs name: no credentials
        why = f"answered by {shown}, which served another model at the end of scoring: held apart, asked again"
        moved = self.store.hold_apart(url, self.since, why)
        for rid, answered in self.fresh.items():
            if provenance.named(answered, url) and outcome.scores.pop(rid, None) is not None:
                outcome.failures[rid] = why
                outcome.failed_at[rid] = shown
        log.warning("%d answer(s) of %s held apart", moved, shown)


async def recheck(pools: dict[str, EndpointPool], scoring: Scoring, outcome: Outcome) -> None:
    """Before a run may call itself complete: every endpoint at work checked once more; what one found serving
    another model answered in this run is held apart."""
    for pool in pools.values():
        for url in await pool.recheck():
            scoring.hold_apart(url, outcome)


async def _all(coroutines: Iterable[Coroutine[Any, Any, None]]) -> None:
    """The coroutines at once; the first error is raised once the others are cancelled (none outlives the call)."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _requests(prompts: Iterator[Pending], units_per_request: int) -> Iterator[list[Pending]]:
    """Consecutive prompts grouped so that each group's units fit one request (`units_per_request`; a prompt is
    never split, and one larger than that goes alone); every prompt on its own where it is 0."""
    batch: list[Pending] = []
    size = 0
    for prompt in prompts:
        n = len(prompt[1])
        if batch and size + n > units_per_request:
            yield batch
            batch, size = [], 0
        batch.append(prompt)
        size += n
    if batch:
        yield batch


def _chunks(items: list[Example], size: int) -> Iterator[list[Example]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def in_flight(cfg: RunConfig) -> int:
    """How many requests to prepare and send at once (each a prompt, or the prompts sharing it): a few per request
    slot of the run's endpoints."""
    slots = sum(cfg.roles[name].endpoint_count() * cfg.roles[name].concurrency for name in cfg.roles_used())
    return max(1, slots * C.PROMPTS_IN_FLIGHT_PER_SLOT)


Spread = Callable[[Scoring, list[Example], Outcome, bool], Awaitable[None]]
"""Scoring the examples some other way than in this process (workers.py): (scoring, examples, outcome, progress)."""


async def score_examples(
    cfg: RunConfig,
    bench: Benchmark[Any],
    examples: list[Example],
    files: OpenRun,
    progress: bool,
    signals: RunSignals,
    outcome: Outcome,
    spread: Spread | None = None,
) -> None:
    """Score every example into `outcome`, in this process or through `spread`. A signal cancels this task, in the
    start-up checks as in the scoring; the run directory is touched (`files.start`) only once the checks have
    passed with no signal. An outage stops the scoring; any other error propagates, `outcome` holding what was
    scored until then."""
    from ..model_kinds.factory import open_served  # imported here: pulls in the HTTP stack

    signals.cancels(asyncio.current_task())
    try:
        async with open_served(cfg, bench.judge_mode, bench.process) as served:
            model = served.model
            if model.process != bench.process and not (model.process and bench.prm_functions):  # cfg.fits missed
                raise ConfigError(f"model type {cfg.type} cannot score benchmark {bench.name}")
            store, samples = files.start(signals.touch)
            outcome.identity = epoch_identity(model.identity, store) or {}
            scoring = Scoring(model, bench, store, samples, cfg.client.same_endpoint_per_prompt)
            try:
                if spread is not None:
                    await spread(scoring, examples, outcome, progress)
                else:
                    await scoring.run(examples, outcome, progress, in_flight(cfg))
                await recheck(served.pools, scoring, outcome)
            except EndpointError as exc:  # every endpoint of a role down past the patience, a rejected key
                outcome.aborted = str(exc)
            finally:
                outcome.warnings = list(model.warnings)
                for pool in served.pools.values():
                    outcome.changes += pool.changes
                    outcome.taken_out += [f"{pool.role} {said}" for said in pool.taken_out]
    except asyncio.CancelledError:
        if not signals.stopped:  # a cancellation from inside, or the caller's own
            raise
        outcome.signal = signals.signal
        if len(outcome.scores) + len(outcome.failures) < len(examples):  # not a signal just after the last prompt
            outcome.aborted = outcome.aborted or signals.reason
    finally:
        signals.cancels(None)
