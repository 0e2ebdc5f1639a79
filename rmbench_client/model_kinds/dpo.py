"""DPO implicit rewards from a policy's (and, for `ratio`, a reference's) prompt log-probs.

The conversation is tokenized once, by the policy server: through its chat template (`dpo.template: server`,
vLLM), or rendered here (`auto`, a Jinja file or a tokenizer_config.json; needed for TGI) and sent as text.
Response tokens are those after the prompt with its generation prompt; when BPE merges across that boundary the
prompt is no longer a prefix of the conversation, and the response starts at the longest common prefix (counted
and reported). The reference scores the identical token ids. Rewards over response tokens t:
    ratio: sum_t (log pi(t) - log pi_ref(t))     sum: sum_t log pi(t)
    avg:   mean_t log pi(t)                      norm: -|| log pi(t) ||_2
A sequence's stored value holds just what these need: token count, policy sum and sum of squares, reference sum.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from functools import partial
from typing import Any

import numpy as np

from ..backends.base import LogprobBackend, Messages
from ..backends.tgi import TgiLogprobs, added_bos_text
from ..backends.vllm import VllmLogprobs
from ..chat_templates import PROBE, ChatTemplate, strip_bos
from ..endpoint_pool import EndpointPool
from ..errors import ConfigError, DataError
from ..examples import Example, conversation
from .base import Unit
from .startup import doubled_first_token, template_agrees

log = logging.getLogger(__name__)


def response_start(prompt_ids: list[int], full_ids: list[int]) -> tuple[int, bool]:
    """Index of the first response token, and whether the prompt/response boundary was merged."""
    n = len(prompt_ids)
    if full_ids[:n] == prompt_ids:
        return n, False
    common = 0
    for a, b in zip(prompt_ids, full_ids, strict=False):  # prefixes of unequal length by design
        if a != b:
            break
        common += 1
    return common, True


POLICY_FIELDS = ("tokens", "policy_sum", "policy_sumsq", "merged")  # a value's policy part; the rest: reference


def summarize(policy: list[float] | None, reference: list[float] | None) -> dict[str, Any]:
    """What the four DPO rewards need of a sequence's response-token log-probs (of either model, or both)."""
    if policy is not None and reference is not None and len(reference) != len(policy):
        raise DataError("policy and reference log-probs cover different tokens")
    value: dict[str, Any] = {}
    if policy is not None:
        values = np.asarray(policy, dtype=np.float64)  # numpy's pairwise sums: exact to ~1e-12 here, and fast
        value |= {"tokens": len(values), "policy_sum": float(values.sum()), "policy_sumsq": float(values @ values)}
    if reference is not None:
        value["reference_sum"] = float(np.asarray(reference, dtype=np.float64).sum())
    return value


def reduce_value(mode: str, value: dict[str, Any]) -> float:
    """The DPO reward of `mode` from a stored value."""
    if not value["tokens"]:
        return 0.0
    if mode == "ratio":
        return float(value["policy_sum"] - value["reference_sum"])
    if mode == "sum":
        return float(value["policy_sum"])
    if mode == "avg":
        return float(value["policy_sum"] / value["tokens"])
    return -math.sqrt(value["policy_sumsq"])


def reduce(mode: str, policy: list[float], reference: list[float] | None) -> float:
    """The DPO reward of `mode` from per-token response log-probs."""
    if mode == "ratio" and reference is None:
        raise DataError("policy and reference log-probs cover different tokens")
    return reduce_value(mode, summarize(policy, reference if mode == "ratio" else None))


class DpoModel:
    pairwise = False

    def __init__(
        self,
        policy: EndpointPool,
        reference: EndpointPool | None,
        mode: str,
        backend: LogprobBackend,
        template: ChatTemplate | None,
        template_option: str,
        served: dict[str, dict[str, Any]],
    ) -> None:
        if mode == "ratio" and reference is None:
            raise ConfigError("dpo.reward ratio needs a reference role")
        self.policy = policy
        self.reference = reference if mode == "ratio" else None  # reference-free modes never call it
        self.mode = mode
        self.backend = backend
        self.template = template
        self.template_option = template_option
        if template is None and not isinstance(backend, VllmLogprobs):
            raise ConfigError("backend tgi cannot template a full conversation: set dpo.template to a Jinja file")
        self.strip = ""  # a literal BOS the server adds again (TGI), removed from every rendered text
        self.merges = 0
        self._served = served
        self._warnings: list[str] = []
        self._identity: dict[str, Any] = {"kind": "dpo", "with_reference": self.reference is not None}
        self.generate: dict[str, bool] = {}  # role -> its servers answer vLLM's token-in/token-out endpoint

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    @property
    def parts(self) -> tuple[str, ...]:
        """Each role's numbers are stored apart: a reference-free mode reuses the policy's from a ratio run."""
        return ("policy", "reference") if self.reference is not None else ("policy",)

    def part_identity(self, identity: dict[str, Any], part: str) -> dict[str, Any]:
        """A role's log-probs depend on its model (epoch), its path, and how conversations become tokens."""
        shared = {k: v for k, v in identity.items() if k not in ("with_reference", "models", "logprobs_path")}
        path = identity.get("logprobs_path", {}).get(part)
        return shared | {"role": part, "model": identity["models"][part]["epoch"], "logprobs_path": path}

    def split(self, value: dict[str, Any]) -> dict[str, Any]:
        policy = {k: v for k, v in value.items() if k in POLICY_FIELDS}
        reference = {k: v for k, v in value.items() if k not in POLICY_FIELDS}
        return {"policy": policy, "reference": reference}

    def join(self, parts: dict[str, Any]) -> dict[str, Any]:
        return {k: v for part in parts.values() for k, v in part.items()}

    @property
    def warnings(self) -> list[str]:
        merged = (
            f"{self.merges} response(s) merged with the prompt at the token boundary; they start at the common prefix"
        )
        return self._warnings + ([merged] if self.merges else [])

    def _pools(self) -> list[EndpointPool]:
        return [self.policy] + ([self.reference] if self.reference is not None else [])

    async def check(self) -> None:
        """An `auto` template only if it tokenizes as the policy server's does (an explicit one is honoured, and a
        difference reported); BOS once; policy and reference share a tokenizer; fingerprints."""
        if self.template is not None and isinstance(self.backend, VllmLogprobs):
            if not await template_agrees(self.policy, self.template):
                if self.template_option == "auto":
                    log.warning("%s renders differently from the policy server's template; the server's is used",
                                self.template.source)  # fmt: skip
                    self.template = None
                else:
                    self._warnings.append(
                        f"dpo.template {self.template.source} renders differently from the policy server's chat "
                        "template; used as given"
                    )
        if self.template is not None and isinstance(self.backend, TgiLogprobs):
            text = self.template.render(PROBE, False)
            tokens = await self.policy.call(lambda ep: self.backend.tokenize(ep, text))  # type: ignore[attr-defined]
            self.strip = added_bos_text(tokens, text)
        await self._choose_paths()
        probe = await asyncio.gather(*(pool.call(lambda ep: self._probe_ids(ep)) for pool in self._pools()))
        if len(probe) == 2 and probe[0] != probe[1]:
            raise ConfigError("policy and reference models do not share a tokenizer and chat template")
        if doubled_first_token(probe[0]):
            self._warnings.append(f"the policy's sequences start with the same token twice ({probe[0][0]}): BOS twice")
        mode = "text" if self.template is not None else "messages"
        self._identity["template"] = {"mode": mode, "digest": self.template.digest if self.template else None}
        self._identity["strip_bos"] = self.strip
        if self.template is None:
            self._identity["server_template_probe"] = probe[0]
        fingerprints = await self._fingerprints()
        self._identity["models"] = {
            role: {"served": self._served[role], "fingerprint": fp} for role, fp in fingerprints.items()
        }

    async def _choose_paths(self) -> None:
        """Per role: `/inference/v1/generate` where every endpoint answers it, else `/v1/completions`. The
        identity names the path (`logprobs_path`), so a summary says which one scored the run."""
        for pool in self._pools():
            found = False
            if isinstance(self.backend, VllmLogprobs):
                vllm = self.backend
                answers = await asyncio.gather(*(vllm.has_generate(ep) for ep in pool.endpoints))
                found = all(answers)
            self.generate[pool.role] = found
        self._identity["logprobs_path"] = {
            role: "/inference/v1/generate" if found else "/v1/completions" for role, found in self.generate.items()
        }

    async def _ids_logprobs(self, pool: EndpointPool, ids: list[list[int]], texts: list[str]) -> list[list[float]]:
        """The log-probs of token-id sequences on `pool`: one request per sequence on the generate endpoint, else
        in as few requests as the backend allows."""
        if self.generate.get(pool.role):
            vllm = self._vllm()
            return list(await asyncio.gather(*(pool.call(partial(vllm.generate_logprobs, ids=seq)) for seq in ids)))
        parts = await asyncio.gather(
            *(
                pool.call(partial(self.backend.logprobs_of_ids, ids=ids[s], texts=texts[s]))
                for s in self._chunks(len(ids))
            )
        )
        return [lp for part in parts for lp in part]

    async def _probe_ids(self, ep: Any) -> list[int]:
        if self.template is None:
            assert isinstance(self.backend, VllmLogprobs)
            return await self.backend.tokenize(ep, PROBE, add_generation_prompt=False)
        return await self.backend.tokenize_as_scored(ep, self._render(PROBE, False))

    async def _fingerprints(self) -> dict[str, list[float]]:
        """Every token's log-prob of the probe conversation, per model."""
        text = self._render(PROBE, False) if self.template is not None else None
        if text is not None and not self.generate.get("policy"):
            ids, (policy,) = await self.policy.call(lambda ep: self.backend.logprobs_of_texts(ep, [text]))
        else:
            if text is not None:
                ids = [await self.policy.call(lambda ep: self.backend.tokenize_as_scored(ep, text))]
            else:
                vllm = self._vllm()
                ids = [await self.policy.call(lambda ep: vllm.tokenize(ep, PROBE, add_generation_prompt=False))]
            (policy,) = await self._ids_logprobs(self.policy, ids, [text or ""])
        out = {"policy": policy}
        if self.reference is not None:
            (out["reference"],) = await self._ids_logprobs(self.reference, ids, [text or ""])
        return out

    def _render(self, messages: Messages, add_generation_prompt: bool) -> str:
        assert self.template is not None
        return strip_bos(self.template.render(messages, add_generation_prompt), self.strip)

    def _vllm(self) -> VllmLogprobs:
        if not isinstance(self.backend, VllmLogprobs):
            raise ConfigError("the server's chat template is reachable on vLLM only: set dpo.template")
        return self.backend

    def units(self, ex: Example) -> list[Unit]:
        convs = [ex.conversation(text) for _, _, text in ex.responses()]
        if self.template is not None:
            return [Unit(t, t) for t in (self._render(c, False) for c in convs)]
        return [Unit(json.dumps(c, ensure_ascii=False), c) for c in convs]

    async def score(
        self, ex: Example, units: list[Unit], parts: tuple[str, ...] = ("policy", "reference")
    ) -> list[Any]:
        """The units' values with the `parts` (roles) asked for; the tokens always come from the policy's server."""
        if self.template is not None and self.generate.get("policy"):
            # ids first (one request), then policy and reference at once, one request per sequence each
            texts = [self._render(conversation(ex.prompt), True), *(u.payload for u in units)]
            vllm = self._vllm()
            prompt_ids, *fulls = await self.policy.call(lambda ep: vllm.render_ids(ep, texts))
            policy, reference = await asyncio.gather(
                self._policy(fulls, texts[1:], parts), self._reference(fulls, texts[1:], parts)
            )
        elif self.template is not None:
            prompt_text = self._render(conversation(ex.prompt), True)
            texts = [u.payload for u in units]
            prompt_ids, (fulls, policy) = await asyncio.gather(
                self.policy.call(lambda ep: self.backend.tokenize_as_scored(ep, prompt_text)), self._logprobs(texts)
            )
            reference = await self._reference(fulls, texts, parts)  # policy log-probs came with the tokens
        else:
            vllm = self._vllm()
            prompt_ids, *fulls = await asyncio.gather(
                self.policy.call(lambda ep: vllm.tokenize(ep, conversation(ex.prompt), add_generation_prompt=True)),
                *(
                    self.policy.call(partial(vllm.tokenize, messages=u.payload, add_generation_prompt=False))
                    for u in units
                ),
            )
            blank = [""] * len(fulls)
            policy, reference = await asyncio.gather(
                self._policy(fulls, blank, parts), self._reference(fulls, blank, parts)
            )
        return self._values(prompt_ids, fulls, policy, reference)

    def _chunks(self, n: int) -> list[slice]:
        size = self.backend.max_batch or n
        return [slice(i, i + size) for i in range(0, n, size)]

    async def _logprobs(self, texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
        """The policy's ids and log-probs of the texts, in as few requests as the backend allows."""
        parts = await asyncio.gather(
            *(
                self.policy.call(partial(self.backend.logprobs_of_texts, texts=texts[s]))
                for s in self._chunks(len(texts))
            )
        )
        return [i for ids, _ in parts for i in ids], [lp for _, lps in parts for lp in lps]

    async def _policy(self, ids: list[list[int]], texts: list[str], parts: tuple[str, ...]) -> list[list[float]] | None:
        if "policy" not in parts:
            return None
        return await self._ids_logprobs(self.policy, ids, texts)

    async def _reference(
        self, ids: list[list[int]], texts: list[str], parts: tuple[str, ...]
    ) -> list[list[float]] | None:
        if self.reference is None or "reference" not in parts:
            return None
        return await self._ids_logprobs(self.reference, ids, texts)

    def _values(
        self,
        prompt_ids: list[int],
        fulls: list[list[int]],
        policy: list[list[float]] | None,
        reference: list[list[float]] | None,
    ) -> list[Any]:
        """The stored value of each sequence: what the DPO rewards need of its response-token log-probs."""
        out = []
        for i, full in enumerate(fulls):
            start, merged = response_start(prompt_ids, full)
            if merged:
                log.info("prompt/response tokens merged at the boundary; response starts at token %d", start)
            lo = max(start, 1) - 1  # log-prob lists start at token 1: the first token has none
            value = summarize(
                policy[i][lo:] if policy is not None else None, reference[i][lo:] if reference is not None else None
            )
            out.append(value | {"merged": True} if merged and policy is not None else value)
        return out

    def reduce(self, value: Any) -> float:
        self.merges += bool(value.get("merged"))  # counted here, so a resumed run reports stored merges too
        return reduce_value(self.mode, value)

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        n = len(ex.chosen)

        def sides(key: str) -> dict[str, list[Any]]:
            return {"chosen": [v[key] for v in values[:n]], "rejected": [v[key] for v in values[n:]]}

        out = {"policy_logprob_sum": sides("policy_sum"), "response_tokens": sides("tokens")}
        if self.reference is not None:
            out["reference_logprob_sum"] = sides("reference_sum")
        return out
