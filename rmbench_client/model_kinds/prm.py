"""Process reward models read through vLLM: one solution per request (or per step), one score per step.

`prm.method: pooling` — vLLM's native PRM (`Qwen2ForProcessRewardModel`, Qwen2.5-Math-PRM): the solution is laid
out as the model card does — a system message (`prm.system`), the question as the user turn, and the steps as the
assistant turn, each followed by the step tag `<extra_0>` — rendered and tokenized by the server's chat template
(`/tokenize`), then sent as token ids to `/pooling`, whose step-tag pooler answers one (wrong, right) pair per tag
(backends/vllm_prm.py): a step's score is the second value.

`prm.method: logprobs` — a causal LM read as a PRM: a step's score is the next-token probability of `good_token`
against `bad_token` where the step's verdict would come, renormalised over the two. `prm.layout: text`
(Math-Shepherd): the text `question step_1<tag>\\nstep_2<tag>…` (BOS added as its tokenizer adds it), read at each
tag; `prm.layout: chat` (RLHFlow, as ProcessBench's `run_eval_prm_rlhflow.py` asks it): the question and first
step as the first user turn, each later step a user turn, `good_token` the assistant's answer to the earlier ones,
read after each user turn's generation prompt (the server's chat template). The scores come from the DPO path's
prompt log-probs (model_kinds/dpo.py, `/inference/v1/generate` or `/v1/completions`): for each step, its prefix
followed by the good token, and by the bad one, the last log-prob of each. A causal model's prediction at a
position depends only on the tokens before it, so this equals one pass over the whole text; it sends two prefixes
per step (about steps x tokens, not tokens).

Alignment is never guessed: the step tags in the tokenized solution are counted (a step whose text holds the tag
is a failed sample, not a shifted one), and the server's answer must carry one value per tag sent. An input
longer than the server's max_model_len is cut at the limit, after the last step tag that fits: the value holds
the first steps' scores only (the contract's shorter list), records `cut`, and the summary warns. A key covers
the max_model_len, so a server restarted with a longer limit scores such a solution again.
"""

from __future__ import annotations

import asyncio
import copy
import json
from functools import partial
from typing import Any

from ..backends.base import Call, Endpoint, on
from ..backends.vllm import VllmLogprobs
from ..backends.vllm_prm import VllmStepRewards, step_probability
from ..benchmarks.shared.step_aggregates import aggregate
from ..config.schema import PrmOptions
from ..errors import ConfigError, SampleError, ShapeError
from ..examples import Example, Message, conversation, prompt_text
from ..pool.endpoint_pool import EndpointPool
from .base import Unit
from .dpo import DpoModel
from .solutions import EachSolution

# the start-up probe: a question and two steps, scored to check the step tag and to fingerprint the model
PROBE = Example("probe", "probe", "", "What is 2 + 3 * 4?", (), (),
                steps=("First, 3 * 4 = 12.", "Then 2 + 12 = 14, so the answer is 14."))  # fmt: skip


class StepScores(list[float]):
    """A solution's merged value: its steps' scores (what scoring_loop.prompt_scores reads), with the stored value
    beside them for `details`."""

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__(float(v) for v in value["steps"])
        self.value = value


def step_positions(ids: list[int], tag_id: int, steps: int, where: str) -> list[int]:
    """The index of each step's tag in `ids`; SampleError when their number is not the number of steps."""
    positions = [i for i, t in enumerate(ids) if t == tag_id]
    if len(positions) != steps:
        raise SampleError(f"{where}: {len(positions)} step tags in the tokenized solution for {steps} steps (a "
                          "step's text holds the step tag, or it merged with a neighbour): not scored, never "
                          "shifted")  # fmt: skip
    return positions


class _Pinned:
    """The face of a role's pool that sends every call to one endpoint: a joiner's fingerprint is its own."""

    def __init__(self, ep: Endpoint, role: str) -> None:
        self.call: Call = on(ep)
        self.role = role
        self.endpoints = [ep]


class ProcessModel(EachSolution):
    """What both server-read PRMs share: one unit per solution, the stored value, cuts counted, details."""

    pairwise = False
    process = True

    def __init__(self, pool: EndpointPool, options: PrmOptions, served: dict[str, Any]) -> None:
        self.pool = pool
        self.options = options
        self.tag = options.tag()
        self._served = served
        self.limit = int(served.get("max_model_len") or 0)  # 0: the server did not say
        self.cuts = 0
        self._identity: dict[str, Any] = {"kind": "prm", "method": options.method, "step_tag": self.tag,
                                          "max_model_len": self.limit or None}  # fmt: skip

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    @property
    def warnings(self) -> list[str]:
        cut = (f"{self.cuts} solution(s) longer than the server's max_model_len ({self.limit} tokens) were cut "
               "there: only their first steps are scored")  # fmt: skip
        return [cut] if self.cuts else []

    def merge(self, values: list[Any]) -> list[Any]:
        self.cuts += sum(bool(v.get("cut")) for v in values)  # counted here: a resumed run reports stored cuts too
        return [StepScores(v) for v in values]

    def reduce(self, value: Any) -> float:
        """A response's one score from its steps' (a benchmark of whole responses: RewardMATH), by `prm.function`;
        never used for process scoring."""
        return aggregate(value, self.options.aggregation())

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        if ex.solutions:  # a response per value: those cut at the length limit
            cut = [k for k, v in enumerate(values) if isinstance(v, StepScores) and v.value.get("cut")]
            return {"cut_responses": cut} if cut else None
        value = values[0].value if isinstance(values[0], StepScores) else {}
        if not value.get("cut"):
            return None
        return {"cut_at_tokens": value["cut"], "steps_scored": len(value["steps"]), "steps": len(ex.steps)}

    async def fingerprint(self, role: str, ep: Endpoint) -> list[float] | None:
        """The probe's step scores on `ep` alone (an endpoint that joins the role)."""
        pinned = copy.copy(self)
        pinned.pool = _Pinned(ep, role)  # type: ignore[assignment]
        return await pinned._fingerprint()

    async def _fingerprint(self) -> list[float]:
        (value,) = await self.score(PROBE, self.units(PROBE))
        if len(value["steps"]) != len(PROBE.steps):
            raise ConfigError(f"role prm: the probe's {len(PROBE.steps)} steps got {len(value['steps'])} scores")
        return [float(v) for v in value["steps"]]


class PoolingPrm(ProcessModel):
    """vLLM's native PRM: step-tag pooling on `/pooling`."""

    def __init__(self, pool: EndpointPool, options: PrmOptions, served: dict[str, Any]) -> None:
        super().__init__(pool, options, served)
        self.backend = VllmStepRewards()
        self.tag_id = -1

    def messages(self, ex: Example) -> list[Message]:
        """The model card's layout: system, the question, the steps each followed by the tag as the answer."""
        answer = "".join(step + self.tag for step in ex.steps)
        messages = conversation(ex.prompt, answer)
        if self.options.system is not None and messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": self.options.system})
        return messages

    async def check(self) -> None:
        """The step tag (one token, the configured id), the server's pooler (one pair per tag of the probe), and
        the fingerprint. (Each endpoint's route, its pooling runner, is admission's check: at start and on joining.)"""
        backend = self.backend
        ids = await self.pool.call(lambda ep: backend.tokenize_text(ep, self.tag, add_special_tokens=False))
        wanted = self.options.step_tag_id
        if len(ids) != 1 or (wanted is not None and ids != [wanted]):
            expected = f"token {wanted}" if wanted is not None else "one token"
            raise ConfigError(f"prm.step_tag {self.tag!r} is {ids} in the server's tokenizer, not {expected}")
        self.tag_id = ids[0]
        probe_ids = await self.pool.call(partial(backend.tokenize, messages=self.messages(PROBE),
                                                 add_generation_prompt=False))  # fmt: skip
        try:
            fingerprint = await self._fingerprint()
        except ShapeError as exc:
            raise ConfigError(f"role prm: {exc}") from None
        except SampleError as exc:  # one value per tag: a server pooling another token answers another count
            raise ConfigError(
                f"role prm: {exc}; start the server with --pooler-config "
                f"'{{\"step_tag_id\": {self.tag_id}}}' (prm.step_tag_id: `serve` passes it)"
            ) from None
        self._identity |= {"step_tag_id": self.tag_id, "system": self.options.system,
                           "server_template_probe": probe_ids}  # fmt: skip
        self._identity["models"] = {"prm": {"served": self._served, "fingerprint": fingerprint}}

    def solution_units(self, ex: Example) -> list[Unit]:
        messages = self.messages(ex)
        return [Unit(json.dumps(messages, ensure_ascii=False), messages)]

    async def solution_score(self, ex: Example, units: list[Unit]) -> list[Any]:
        return [await self._one(ex, u.payload) for u in units]

    async def _one(self, ex: Example, messages: list[Message]) -> dict[str, Any]:
        backend = self.backend
        ids = await self.pool.call(partial(backend.tokenize, messages=messages, add_generation_prompt=False))
        positions = step_positions(ids, self.tag_id, len(ex.steps), f"prompt {ex.id}")
        cut = 0
        if self.limit and len(ids) > self.limit:
            cut, ids = self.limit, ids[: self.limit]
            positions = [p for p in positions if p < self.limit]
        steps = await self.pool.call(partial(backend.step_probabilities, ids=ids)) if positions else []
        if len(steps) != len(positions):
            raise SampleError(f"prompt {ex.id}: the server answered {len(steps)} step values for {len(positions)} "
                              f"step tags (its step_tag_id is not {self.tag_id}?)")  # fmt: skip
        return {"steps": steps, "tokens": len(ids)} | ({"cut": cut} if cut else {})


class LogprobPrm(ProcessModel):
    """A causal LM as a PRM: the good token's probability against the bad one's at each step tag, from the DPO
    path's prompt log-probs (its generate or completions route, its batching)."""

    def __init__(self, pool: EndpointPool, options: PrmOptions, served: dict[str, Any]) -> None:
        super().__init__(pool, options, served)
        self.backend = VllmLogprobs()
        # the DPO machinery on this pool, reference-free: its route choice and its log-prob requests
        self.dpo = DpoModel(pool, None, "sum", self.backend, None, "server", {pool.role: served})
        self.tag_id = self.good = self.bad = -1

    def text(self, ex: Example) -> str:
        """Math-Shepherd's input: the question, a space, and the steps one per line, each ending with the tag."""
        return f"{prompt_text(ex.prompt)} " + "\n".join(step + self.tag for step in ex.steps)

    def turns(self, ex: Example) -> list[list[Message]]:
        """RLHFlow's conversation up to each step's user turn, the earlier steps answered with the good token."""
        messages: list[Message] = []
        prefixes = []
        for k, step in enumerate(ex.steps):
            messages.append({"role": "user", "content": f"{prompt_text(ex.prompt)}\n\n{step}" if k == 0 else step})
            prefixes.append(list(messages))
            messages.append({"role": "assistant", "content": self.options.good_token})
        return prefixes

    async def _one_token(self, text: str, what: str) -> int:
        backend = self.backend
        ids = await self.pool.call(lambda ep: backend.tokenize_text(ep, text, add_special_tokens=False))
        if len(ids) != 1:
            raise ConfigError(f"prm.{what} {text!r} is {len(ids)} tokens in the server's tokenizer ({ids}): it must "
                              "be one")  # fmt: skip
        return ids[0]

    async def check(self) -> None:
        """The good and bad tokens are one token each; the tag's last token marks the steps (as Math-Shepherd
        finds it); the log-prob route; the fingerprint."""
        backend = self.backend
        if self.options.layout == "text":
            tag_ids = await self.pool.call(lambda ep: backend.tokenize_text(ep, self.tag, add_special_tokens=False))
            if not tag_ids:
                raise ConfigError(f"prm.step_tag {self.tag!r} is no token in the server's tokenizer")
            self.tag_id = tag_ids[-1]
        self.good = await self._one_token(self.options.good_token, "good_token")
        self.bad = await self._one_token(self.options.bad_token, "bad_token")
        if self.good == self.bad:
            raise ConfigError("prm.good_token and prm.bad_token are the same token")
        await self.dpo._choose_paths()
        self._identity |= {"layout": self.options.layout, "step_tag_id": self.tag_id,
                           "good": [self.options.good_token, self.good],
                           "bad": [self.options.bad_token, self.bad],
                           "logprobs_path": self.dpo.identity["logprobs_path"]}  # fmt: skip
        fingerprint = await self._fingerprint()
        self._identity["models"] = {"prm": {"served": self._served, "fingerprint": fingerprint}}

    def solution_units(self, ex: Example) -> list[Unit]:
        if self.options.layout == "chat":
            turns = self.turns(ex)
            return [Unit(json.dumps(turns[-1] if turns else [], ensure_ascii=False), turns)]
        text = self.text(ex)
        return [Unit(text, text)]

    async def solution_score(self, ex: Example, units: list[Unit]) -> list[Any]:
        return [await self._one(ex, u.payload) for u in units]

    async def _prefixes(self, ex: Example, payload: Any) -> tuple[list[list[int]], int]:
        """The token ids before each step's verdict, and the whole input's length."""
        backend = self.backend
        if self.options.layout == "chat":
            prefixes = await asyncio.gather(
                *(self.pool.call(partial(backend.tokenize, messages=m, add_generation_prompt=True)) for m in payload)
            )
            return list(prefixes), len(prefixes[-1]) if prefixes else 0
        ids = await self.pool.call(lambda ep: backend.tokenize_text(ep, payload, add_special_tokens=True))
        positions = step_positions(ids, self.tag_id, len(ex.steps), f"prompt {ex.id}")
        return [ids[: p + 1] for p in positions], len(ids)

    async def _one(self, ex: Example, payload: Any) -> dict[str, Any]:
        prefixes, tokens = await self._prefixes(ex, payload)
        cut = 0
        if self.limit:  # a prefix and its one candidate token, with room for the one token generated
            fits = [p for p in prefixes if len(p) + 1 < self.limit]
            if len(fits) < len(prefixes):
                cut, prefixes = self.limit, fits
        sequences = [prefix + [token] for prefix in prefixes for token in (self.good, self.bad)]
        texts = [""] * len(sequences)
        found = await self.dpo._ids_logprobs(self.pool.role, self.pool.call, sequences, texts) if sequences else []
        last = [lp[-1] for lp in found]
        steps = [step_probability(good, bad) for good, bad in zip(last[::2], last[1::2], strict=True)]
        return {"steps": steps, "tokens": tokens} | ({"cut": cut} if cut else {})
