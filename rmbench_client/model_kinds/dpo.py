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

from ..backends.base import Call, Endpoint, LogprobBackend, Messages, on
from ..backends.tgi import TgiLogprobs, added_bos_text
from ..backends.vllm import VllmLogprobs
from ..errors import ConfigError, DataError
from ..examples import Example, conversation
from ..pool.endpoint_pool import EndpointPool
from .base import Unit
from .chat_templates import PROBE, ChatTemplate, strip_bos
from .startup import doubled_first_token, template_difference

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


def summarize(policy: list[float], reference: list[float] | None) -> dict[str, Any]:
    """What the four DPO rewards need of a sequence's response-token log-probs."""
    if reference is not None and len(reference) != len(policy):
        raise DataError("policy and reference log-probs cover different tokens")
    values = np.asarray(policy, dtype=np.float64)  # numpy's pairwise sums: exact to ~1e-12 here, and fast
    value: dict[str, Any] = {
        "tokens": len(values),
        "policy_sum": float(values.sum()),
        "policy_sumsq": float(values @ values),
    }
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
    process = False

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
            if (difference := await template_difference(self.policy, self.template)) is not None:
                if self.template_option == "auto":
                    log.warning("%s renders differently from the policy server's template; the server's is used",
                                self.template.source)  # fmt: skip
                    self.template = None
                else:
                    self._warnings.append(f"dpo.template: {difference.message}; used as given")
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
        for pool in self._pools():  # each endpoint's routes are admission's check
            found = False
            if isinstance(self.backend, VllmLogprobs):
                vllm = self.backend
                answers = await asyncio.gather(*(vllm.has_generate(ep) for ep in pool.endpoints))
                found = all(answers)
            self.generate[pool.role] = found
        self._identity["logprobs_path"] = {
            role: "/inference/v1/generate" if found else "/v1/completions" for role, found in self.generate.items()
        }

    async def _ids_logprobs(self, role: str, call: Call, ids: list[list[int]], texts: list[str]) -> list[list[float]]:
        """The log-probs of token-id sequences on `role`'s pool (`call`): one request per sequence on the generate
        endpoint, else in as few requests as the backend allows."""
        if self.generate.get(role):
            vllm = self._vllm()
            return list(await asyncio.gather(*(call(partial(vllm.generate_logprobs, ids=seq)) for seq in ids)))
        parts = await asyncio.gather(
            *(call(partial(self.backend.logprobs_of_ids, ids=ids[s], texts=texts[s])) for s in self._chunks(len(ids)))
        )
        return [lp for part in parts for lp in part]

    async def _probe_ids(self, ep: Any) -> list[int]:
        if self.template is None:
            assert isinstance(self.backend, VllmLogprobs)
            return await self.backend.tokenize(ep, PROBE, add_generation_prompt=False)
        return await self.backend.tokenize_as_scored(ep, self._render(PROBE, False))

    async def _fingerprints(self) -> dict[str, list[float]]:
        return await self._fingerprints_on(self.policy.call, self.reference.call if self.reference else None)

    async def _fingerprints_on(self, policy_call: Call, reference_call: Call | None) -> dict[str, list[float]]:
        """Every token's log-prob of the probe conversation, per model (the reference scores the policy's ids)."""
        text = self._render(PROBE, False) if self.template is not None else None
        if text is not None and not self.generate.get("policy"):
            ids, (policy,) = await policy_call(lambda ep: self.backend.logprobs_of_texts(ep, [text]))
        else:
            if text is not None:
                ids = [await policy_call(lambda ep: self.backend.tokenize_as_scored(ep, text))]
            else:
                vllm = self._vllm()
                ids = [await policy_call(lambda ep: vllm.tokenize(ep, PROBE, add_generation_prompt=False))]
            (policy,) = await self._ids_logprobs("policy", policy_call, ids, [text or ""])
        out = {"policy": policy}
        if reference_call is not None:
            (out["reference"],) = await self._ids_logprobs("reference", reference_call, ids, [text or ""])
        return out

    async def fingerprint(self, role: str, ep: Endpoint) -> list[float] | None:
        """`role`'s fingerprint on `ep`; ConfigError when `ep` lacks the generate endpoint the role's path uses."""
        if self.generate.get(role) and not await self._vllm().has_generate(ep):
            raise ConfigError(
                f"endpoint {ep} does not answer /inference/v1/generate, which this run's {role} endpoints do and "
                "this run uses (start it with --enable-scale-out, as the others)"
            )
        if role == "policy":
            return (await self._fingerprints_on(on(ep), None))["policy"]
        return (await self._fingerprints_on(self.policy.call, on(ep)))["reference"]

    def _render(self, messages: Messages, add_generation_prompt: bool) -> str:
        assert self.template is not None
        return strip_bos(self.template.render(messages, add_generation_prompt), self.strip)

    def _vllm(self) -> VllmLogprobs:
        if not isinstance(self.backend, VllmLogprobs):
            raise ConfigError("the server's chat template is reachable on vLLM only: set dpo.template")
        return self.backend

    def units(self, ex: Example) -> list[Unit]:
        """A policy unit per response, then (for `ratio`) a reference unit per response: each role's log-probs are
        stored under that role's key, so another DPO mode reuses the roles it shares."""
        convs = [ex.conversation(text) for _, _, text in ex.responses()]
        sent: list[tuple[str, Any]]
        if self.template is not None:
            sent = [(t, t) for t in (self._render(c, False) for c in convs)]
        else:
            sent = [(json.dumps(c, ensure_ascii=False), c) for c in convs]
        return [Unit(m, (i, payload), pool.role) for pool in self._pools() for i, (m, payload) in enumerate(sent)]

    async def score(self, ex: Example, units: list[Unit]) -> list[Any]:
        """Tokenize the responses the units need (by the policy server), then the wanted roles' log-probs."""
        payloads = {u.payload[0]: u.payload[1] for u in units}
        need = sorted(payloads)  # response indices
        wanted = {role: [i for i in need if any(u.role == role and u.payload[0] == i for u in units)]
                  for role in ("policy", "reference")}  # fmt: skip
        fulls: dict[int, list[int]] = {}
        logprobs: dict[str, dict[int, list[float]]] = {"policy": {}, "reference": {}}
        if self.template is not None and self.generate.get("policy"):
            texts = [self._render(conversation(ex.prompt), True), *(payloads[i] for i in need)]
            vllm = self._vllm()
            prompt_ids, *ids = await self.policy.call(lambda ep: vllm.render_ids(ep, texts))
            fulls = dict(zip(need, ids, strict=True))
        elif self.template is not None:
            prompt_text = self._render(conversation(ex.prompt), True)
            own = [i for i in need if i not in wanted["policy"]]  # ids without the policy's log-probs
            texts = [payloads[i] for i in wanted["policy"]]
            prompt_ids, *others = await asyncio.gather(
                self.policy.call(lambda ep: self.backend.tokenize_as_scored(ep, prompt_text)),
                *(self.policy.call(partial(self.backend.tokenize_as_scored, text=payloads[i])) for i in own),
            )
            ids, policy = await self._logprobs(texts) if texts else ([], [])
            fulls = dict(zip(wanted["policy"], ids, strict=True)) | dict(zip(own, others, strict=True))
            logprobs["policy"] = dict(zip(wanted["policy"], policy, strict=True))
        else:
            vllm = self._vllm()
            prompt_ids, *ids = await asyncio.gather(
                self.policy.call(lambda ep: vllm.tokenize(ep, conversation(ex.prompt), add_generation_prompt=True)),
                *(
                    self.policy.call(partial(vllm.tokenize, messages=payloads[i], add_generation_prompt=False))
                    for i in need
                ),
            )
            fulls = dict(zip(need, ids, strict=True))
        missing = [p for p in self._pools() if wanted[p.role] and not logprobs[p.role]]
        found = await asyncio.gather(
            *(
                self._ids_logprobs(
                    pool.role,
                    pool.call,
                    [fulls[i] for i in wanted[pool.role]],
                    [payloads[i] if self.template is not None else "" for i in wanted[pool.role]],
                )
                for pool in missing
            )
        )
        for pool, lps in zip(missing, found, strict=True):
            logprobs[pool.role] = dict(zip(wanted[pool.role], lps, strict=True))
        return [self._value(u.role or "policy", prompt_ids, fulls[u.payload[0]], logprobs, u.payload[0]) for u in units]

    def _value(
        self, role: str, prompt_ids: list[int], full: list[int], logprobs: dict[str, dict[int, list[float]]], i: int
    ) -> dict[str, Any]:
        """A sequence's stored value for one role: what the DPO rewards need of its response-token log-probs."""
        start, merged = response_start(prompt_ids, full)
        if merged:
            log.info("prompt/response tokens merged at the boundary; response starts at token %d", start)
        lo = max(start, 1) - 1  # log-prob lists start at token 1: the first token has none
        values = logprobs[role][i][lo:]
        if role == "policy":
            value = summarize(values, None)
        else:
            value = {"tokens": len(values), "reference_sum": float(np.asarray(values, dtype=np.float64).sum())}
        return value | {"merged": True} if merged else value

    def merge(self, values: list[Any]) -> list[Any]:
        """A response's value from its policy value and, for `ratio`, its reference value."""
        if self.reference is None:
            return values
        n = len(values) // 2
        out = []
        for policy, reference in zip(values[:n], values[n:], strict=True):
            if policy["tokens"] != reference["tokens"]:
                raise DataError("policy and reference log-probs cover different tokens")
            out.append(policy | {"reference_sum": reference["reference_sum"]})
        return out

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
