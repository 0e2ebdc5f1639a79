"""Reward models: the raw reward of each (prompt, response) conversation.

Templates (`reward.template`): `server` (vLLM applies the model's chat template, one conversation per request),
`ids` (token ids from vLLM's `/tokenize`, several sequences per request), or a client-side template (`auto`, a
Jinja file or a tokenizer_config.json) rendered here and sent as text — the only choice for TEI and SGLang, which
apply no chat template. Servers that add BOS themselves (TEI, SGLang) get the template's literal BOS removed, after
a start-up check of how they tokenize a probe. Multi-output heads: one output by index, or a weighted sum.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable
from functools import partial
from typing import Any

from ..backends.base import Call, Endpoint, Messages, TextRewardBackend, on
from ..backends.vllm import VllmReward
from ..config.schema import RewardOptions, RoleConfig
from ..errors import ConfigError, EndpointError
from ..examples import Example, conversation
from ..pool.endpoint_pool import EndpointPool
from ..pool.provenance import for_units
from .base import Unit
from .chat_templates import PROBE, ChatTemplate, strip_bos
from .startup import doubled_first_token, template_agrees, template_difference

log = logging.getLogger(__name__)
FINGERPRINT_PROBES: list[Messages] = [
    PROBE,
    conversation("What is the capital of France?", "Paris is the capital of France."),
]


class RewardModel:
    pairwise = False
    process = False

    def __init__(
        self,
        pool: EndpointPool,
        role: RoleConfig,
        options: RewardOptions,
        backend: TextRewardBackend,
        template: ChatTemplate | None,
        served: dict[str, Any],
    ) -> None:
        self.pool = pool
        self.options = options
        self.backend = backend
        self.template = template
        self.kind = role.backend
        if self.template is None and (self.kind != "vllm" or options.template not in ("server", "ids", "auto")):
            raise ConfigError(f"backend {self.kind} applies no chat template: set reward.template to a Jinja file")
        self._vllm = backend if isinstance(backend, VllmReward) else None  # messages and ids modes need vLLM
        self.strip = ""  # a literal BOS the server adds again, removed from every rendered text
        self.warnings: list[str] = []
        self._served = served
        self._identity: dict[str, Any] = {"kind": "reward", "backend": self.kind}

    @property
    def mode(self) -> str:
        """How conversations reach the server: rendered `text`, `messages` (its template) or `ids` (its tokens)."""
        if self.template is not None:
            return "text"
        return "ids" if self.options.template == "ids" else "messages"

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    @property
    def units_per_request(self) -> int:
        """A text's reward is the text's alone, so the texts (or token ids) of several prompts share a request;
        conversations the server templates go one per request whatever happens (0)."""
        return 0 if self.mode == "messages" else self.options.texts_per_request

    async def check(self) -> None:
        """Keep an `auto` template only if it tokenizes as the server's does; make sure BOS arrives once (or say
        why it cannot be verified); fingerprint the model. (Each endpoint's routes are admission's check.)"""
        if self.options.template == "auto" and self.template is not None:
            if not await template_agrees(self.pool, self.template):
                source = self.template.source
                log.warning("%s renders differently from the server's template; the server's is used", source)
                self.template = None
        elif self.template is not None and self._vllm is not None:  # an explicit template: BOS as the server's
            difference = await template_difference(self.pool, self.template)
            if difference is not None and difference.bos_missing:
                self.warnings.append(difference.message)
        if self.mode == "text":
            await self._check_text_bos()
        else:
            vllm = self._vllm_backend()
            ids = await self.pool.call(lambda ep: vllm.tokenize(ep, PROBE, add_generation_prompt=False))
            if doubled_first_token(ids):
                self.warnings.append(f"the server's chat template yields a doubled first token ({ids[0]}): BOS twice")
            self._identity["server_template_probe"] = ids  # the server's template is part of what is scored
        self._identity["template"] = {"mode": self.mode, "digest": self.template.digest if self.template else None}
        self._identity["strip_bos"] = self.strip
        fingerprint = await self._fingerprint(self.pool.call)
        self._identity["models"] = {"reward": {"served": self._served, "fingerprint": fingerprint}}

    async def fingerprint(self, role: str, ep: Endpoint) -> list[float] | None:
        return await self._fingerprint(on(ep))

    async def _fingerprint(self, call: Call) -> list[float]:
        probes = await self._score_payloads(self._payloads(FINGERPRINT_PROBES), call)
        for values in probes:  # a head_index or head_weights that does not fit the head: found before any scoring
            self.reduce(values)
        return [v for values in probes for v in values]

    async def _check_text_bos(self) -> None:
        assert self.template is not None
        text = self.template.render(PROBE, False)
        bos = self.template.bos_token
        try:
            ids = await self.pool.call(lambda ep: self.backend.tokenize_as_scored(ep, text))
        except EndpointError as exc:
            if self.backend.adds_special_tokens and bos and text.startswith(bos):
                self.strip = bos  # the server adds BOS itself (TEI, SGLang always do)
            self.warnings.append(
                f"BOS not verified: {self.kind} could not tokenize the probe ({exc}); "
                + (
                    "the template's literal BOS is removed since the server adds it"
                    if self.strip
                    else "sent as rendered"
                )
            )
            return
        if not doubled_first_token(ids):
            return
        if self.backend.adds_special_tokens and bos and text.startswith(bos):
            self.strip = bos
            stripped = strip_bos(text, bos)
            again = await self.pool.call(lambda ep: self.backend.tokenize_as_scored(ep, stripped))
            if not doubled_first_token(again):
                log.info("%s adds BOS itself: the template's literal %r is removed before sending", self.kind, bos)
                return
        self.warnings.append(f"the template {self.template.source} and the server give BOS twice ({ids[:2]})")

    def _payloads(self, conversations: list[Messages]) -> list[Any]:
        if self.template is None:
            return list(conversations)
        return [strip_bos(self.template.render(c, False), self.strip) for c in conversations]

    def units(self, ex: Example) -> list[Unit]:
        payloads = self._payloads([ex.conversation(text) for _, _, text in ex.responses()])
        if self.template is not None:
            return [Unit(p, p) for p in payloads]
        return [Unit(json.dumps(p, ensure_ascii=False), p) for p in payloads]

    async def score(self, ex: Example, units: list[Unit]) -> list[Any]:
        return await self._score_payloads([u.payload for u in units])

    async def score_units(self, units: list[Unit]) -> list[Any]:
        return await self._score_payloads([u.payload for u in units])

    async def _score_payloads(self, payloads: list[Any], call: Call | None = None) -> list[list[float]]:
        """Every payload's head outputs, through the pool (or `call`: one endpoint, for its fingerprint)."""
        call = call or self.pool.call
        if self.mode == "text":
            size = self.backend.max_batch or len(payloads)
            starts = range(0, len(payloads), size)
            backend = self.backend
            # gathered even when there is one chunk: the task lets answers already read be handled before this
            # prompt's bookkeeping (awaited inline, the share of each request's time spent waiting in the client
            # rose from 0.038-0.043 to 0.044-0.051 at 16 simulated endpoints; by hand, alternating runs); several
            # chunks each say which units they score (pool/provenance.py)

            def scored_chunk(start: int) -> Awaitable[list[list[float]]]:
                work = call(partial(backend.rewards_for_texts, texts=payloads[start : start + size]))
                return work if len(starts) == 1 else for_units(range(start, start + size), work)

            done = await asyncio.gather(*(scored_chunk(s) for s in starts))
            return [values for chunk in done for values in chunk]
        vllm = self._vllm_backend()
        if self.mode == "ids":
            ids = await asyncio.gather(
                *(for_units([i], call(partial(vllm.tokenize, messages=m, add_generation_prompt=False)))
                  for i, m in enumerate(payloads))
            )  # fmt: skip
            scored: list[list[float]] = await call(lambda ep: vllm.rewards_for_inputs(ep, ids))
            return scored
        # one conversation per request in this form: each is retried on its own, and says which unit it scores
        calls = (for_units([i], call(partial(vllm.rewards_for_messages, messages=m))) for i, m in enumerate(payloads))
        return list(await asyncio.gather(*calls))

    def _vllm_backend(self) -> VllmReward:
        if self._vllm is None:
            raise ConfigError(f"backend {self.kind} applies no chat template: set reward.template to a Jinja file")
        return self._vllm

    def merge(self, values: list[Any]) -> list[Any]:
        return values

    def reduce(self, value: Any) -> float:
        outputs = [float(v) for v in value]
        weights = self.options.head_weights
        if weights is not None:
            if len(weights) != len(outputs):
                raise ConfigError(
                    f"reward.head_weights has {len(weights)} weights but the model's head has {len(outputs)} outputs"
                )
            return sum(w * v for w, v in zip(weights, outputs, strict=True))
        if self.options.head_index >= len(outputs):
            raise ConfigError(
                f"reward.head_index is {self.options.head_index} but the model's head has {len(outputs)} outputs "
                f"(indices 0-{len(outputs) - 1})"
            )
        return outputs[self.options.head_index]

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        return None
