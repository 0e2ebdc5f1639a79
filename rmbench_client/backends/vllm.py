"""vLLM: rewards from the pooling runner (`/pooling`), tokenization (`/tokenize`), prompt log-probs
(`/inference/v1/generate`, else `/v1/completions`). Every method is exactly one HTTP request, so the pool's
concurrency and rate limit hold per request; answers are parsed into the typed models of `schemas`, prompt
log-probs directly (`token_logprobs`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from ..errors import EndpointError, SampleError, ShapeError
from .base import Endpoint, Messages
from .schemas import GENERATE_ANSWER, ModelList, PoolingResponse, TokenizeResponse, parse, uncollected
from .transport import answer_json, request_body, request_json


def finite(values: list[float], where: str, what: str = "reward") -> list[float]:
    """The values, or a SampleError when the server sent a NaN or an infinity (never scored, never stored)."""
    if not all(math.isfinite(v) for v in values):
        raise SampleError(f"{where}: the server returned a non-finite {what} {values[:8]}")
    return values


def _plain_outputs(body: Any) -> list[list[float]] | None:
    """The common answer (a list of {"index": i, "data": [numbers]} in order) read directly; None for any other
    shape, which `PoolingResponse` then validates (and names the field of an error)."""
    try:
        items = body["data"]
        out = []
        for i, item in enumerate(items):
            values = item["data"]
            if item.get("index", 0) != i or type(values) is not list or not values:
                return None
            if not all(type(v) is float or type(v) is int for v in values):
                return None
            out.append(values)
        return out
    except (TypeError, KeyError, AttributeError):
        return None


def _outputs(body: Any, expected: int, where: str) -> list[list[float]]:
    plain = _plain_outputs(body)
    if plain is not None and len(plain) == expected:
        return [finite([float(v) for v in values], where) for values in plain]
    response = parse(PoolingResponse, body, where)
    if len(response.data) != expected:
        raise ShapeError(f"{where}: unexpected answer: {len(response.data)} results for {expected} inputs")
    return [finite(item.outputs(), where) for item in sorted(response.data, key=lambda d: d.index)]


class VllmTokenizer:
    """The server's own tokenization: a conversation through its chat template, or a text."""

    async def tokenize(self, ep: Endpoint, messages: Messages, add_generation_prompt: bool) -> list[int]:
        payload = {"model": ep.model, "messages": messages, "add_generation_prompt": add_generation_prompt}
        body = await request_json(ep, "POST", "/tokenize", payload)
        return parse(TokenizeResponse, body, f"{ep}/tokenize").tokens

    async def tokenize_text(self, ep: Endpoint, text: str, add_special_tokens: bool) -> list[int]:
        payload = {"model": ep.model, "prompt": text, "add_special_tokens": add_special_tokens}
        body = await request_json(ep, "POST", "/tokenize", payload)
        return parse(TokenizeResponse, body, f"{ep}/tokenize").tokens


class VllmReward(VllmTokenizer):
    """Raw reward-head outputs (`use_activation: false`: no sigmoid squashing a one-label head).

    vLLM 0.13 runs `/pooling` without a `task` as `token_classify` (one value per token); asked with
    `"task": "classify"` it gives the sequence's raw value, as later releases do without it. The first answer of
    the wrong shape (a start-up check's) is asked again with the task, and if that answers, every later request
    carries it: newer servers, which may refuse a task their model was not started for, never see it."""

    adds_special_tokens = False  # texts go out with add_special_tokens false: what the template wrote is scored
    max_batch: int | None = None  # any number of sequences per request

    def __init__(self) -> None:
        self.task: dict[str, str] = {}  # {"task": "classify"} once a server has needed it
        self._probe: asyncio.Future[bool] | None = None  # the one request asked again with the task, per run

    async def _pooling(self, ep: Endpoint, payload: dict[str, Any], expected: int) -> list[list[float]]:
        where = f"{ep}/pooling"
        sent = self.task
        body = await request_json(ep, "POST", "/pooling", payload | sent)
        try:
            return _outputs(body, expected, where)
        except ShapeError as exc:
            if sent:
                raise
            error = exc
        if self._probe is None:  # the first answer of the wrong shape: ask once more with the task
            self._probe = asyncio.get_running_loop().create_future()
            try:
                outputs = _outputs(await request_json(ep, "POST", "/pooling", payload | CLASSIFY), expected, where)
            except BaseException:
                self._probe.set_result(False)
                raise
            self.task = CLASSIFY
            self._probe.set_result(True)
            return outputs
        if not await asyncio.shield(self._probe):  # requests sent at once wait for that answer
            raise error
        return _outputs(await request_json(ep, "POST", "/pooling", payload | CLASSIFY), expected, where)

    async def rewards_for_messages(self, ep: Endpoint, messages: Messages) -> list[float]:
        """One conversation; the server applies the model's chat template."""
        payload = {"model": ep.model, "messages": messages, "use_activation": False}
        return (await self._pooling(ep, payload, 1))[0]

    async def rewards_for_inputs(self, ep: Endpoint, inputs: Sequence[str] | Sequence[list[int]]) -> list[list[float]]:
        """Several token-id sequences or pre-templated texts in one request; no special tokens are added,
        so a BOS the template already wrote is not doubled."""
        payload = {"model": ep.model, "input": list(inputs), "use_activation": False, "add_special_tokens": False}
        return await self._pooling(ep, payload, len(inputs))

    async def rewards_for_texts(self, ep: Endpoint, texts: Sequence[str]) -> list[list[float]]:
        return await self.rewards_for_inputs(ep, texts)

    async def tokenize_as_scored(self, ep: Endpoint, text: str) -> list[int]:
        return await self.tokenize_text(ep, text, add_special_tokens=False)


CLASSIFY = {"task": "classify"}  # a sequence's value from vLLM 0.13's /pooling (see VllmReward)
# vLLM writes a -inf log-prob as this value in its answers (clamp_prompt_logprobs)
CLAMPED_LOGPROB = -9999.0
GENERATE_PATH = "/inference/v1/generate"
# the token-in/token-out endpoint: the actual tokens' log-probs only, no detokenized strings
GENERATE_PARAMS = {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0, "detokenize": False}


class VllmLogprobs(VllmTokenizer):
    """Prompt log-probs of token-id sequences or pre-templated texts: `/inference/v1/generate` (one sequence per
    request, `detokenize: false`) on servers started with `--enable-scale-out`, else `/v1/completions`
    (prompt_logprobs=0, several sequences per request, each log-prob with its detokenized string)."""

    max_batch: int | None = None

    def __init__(self) -> None:
        self.has_render = True  # until a server answers 404 on /v1/completions/render

    async def tokenize_as_scored(self, ep: Endpoint, text: str) -> list[int]:
        return await self.tokenize_text(ep, text, add_special_tokens=False)

    async def logprobs_of_texts(self, ep: Endpoint, texts: Sequence[str]) -> tuple[list[list[int]], list[list[float]]]:
        return await self.prompt_logprobs_texts(ep, texts)

    async def logprobs_of_ids(self, ep: Endpoint, ids: Sequence[list[int]], texts: Sequence[str]) -> list[list[float]]:
        return await self.prompt_logprobs(ep, ids)

    async def has_generate(self, ep: Endpoint) -> bool:
        """Whether the server answers `/inference/v1/generate` (vLLM started with --enable-scale-out); vLLM
        without it answers 403, older versions 404."""
        payload = {"model": ep.model, "token_ids": [1, 1], "sampling_params": GENERATE_PARAMS}
        try:
            body = await request_json(ep, "POST", GENERATE_PATH, payload)
        except EndpointError as exc:
            if " HTTP 403" in str(exc) or " HTTP 404" in str(exc):
                return False
            raise
        return isinstance(body, dict) and isinstance(body.get("prompt_logprobs"), list)

    async def generate_logprobs(self, ep: Endpoint, ids: list[int]) -> list[float]:
        """log p(token t | tokens before it) for every token of one sequence after the first."""
        payload = {"model": ep.model, "token_ids": ids, "sampling_params": GENERATE_PARAMS}
        content = await request_body(ep, "POST", GENERATE_PATH, payload)
        return generate_logprobs(ids, content, f"{ep}{GENERATE_PATH}")

    async def render_ids(self, ep: Endpoint, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of pre-templated texts (no special tokens added), in one request
        (`/v1/completions/render`, served alongside the generate endpoint since vLLM 0.14); on a server without
        it (0.13 answers 404), one `/tokenize` request per text, which gives the same ids."""
        if not self.has_render:
            return list(await asyncio.gather(*(self.tokenize_text(ep, t, add_special_tokens=False) for t in texts)))
        payload = {"model": ep.model, "prompt": list(texts), "add_special_tokens": False}
        where = f"{ep}/v1/completions/render"
        try:
            body = await request_json(ep, "POST", "/v1/completions/render", payload)
        except EndpointError as exc:
            if " HTTP 404" not in str(exc):
                raise
            self.has_render = False
            return await self.render_ids(ep, texts)
        try:
            ids = [item["token_ids"] for item in body]
            ok = len(ids) == len(texts) and all(isinstance(x, list) for x in ids)
        except (TypeError, KeyError):
            ok = False
        if not ok:
            raise ShapeError(
                f"{where}: unexpected answer: expected {len(texts)} items with token_ids ({str(body)[:120]})"
            )
        return ids

    async def prompt_logprobs(self, ep: Endpoint, sequences: Sequence[list[int]]) -> list[list[float]]:
        """log p(token t | tokens before it) for every token after the first (len(seq) - 1 values each)."""
        choices = await self._completions(ep, list(sequences), {})
        where = f"{ep}/v1/completions"
        return [token_logprobs(seq, c.get("prompt_logprobs"), where) for seq, c in zip(sequences, choices, strict=True)]

    async def prompt_logprobs_texts(
        self, ep: Endpoint, texts: Sequence[str]
    ) -> tuple[list[list[int]], list[list[float]]]:
        """Token ids and prompt log-probs of pre-templated texts (no special tokens added: BOS is in the text)."""
        choices = await self._completions(ep, list(texts), {"add_special_tokens": False, "return_token_ids": True})
        where = f"{ep}/v1/completions"
        ids = []
        for c in choices:
            seq = c.get("prompt_token_ids")
            if not isinstance(seq, list):
                raise ShapeError(f"{where}: unexpected answer: field choices.prompt_token_ids missing")
            ids.append(seq)
        return ids, [token_logprobs(seq, c.get("prompt_logprobs"), where) for seq, c in zip(ids, choices, strict=True)]

    async def _completions(self, ep: Endpoint, prompts: list[Any], extra: dict[str, Any]) -> list[dict[str, Any]]:
        payload = {"model": ep.model, "prompt": prompts, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}
        body = await request_json(ep, "POST", "/v1/completions", payload | extra)
        where = f"{ep}/v1/completions"
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise ShapeError(f"{where}: unexpected answer: field choices: not a list of objects ({str(body)[:120]})")
        if len(choices) != len(prompts):
            raise ShapeError(f"{where}: unexpected answer: {len(choices)} choices for {len(prompts)} prompts")
        return sorted(choices, key=lambda c: c.get("index", 0))


def generate_logprobs(ids: list[int], content: bytes, where: str) -> list[float]:
    """log p(ids[t] | ids[:t]) for t >= 1 from a generate answer: the typed decode, or, for any answer it does not
    read (a missing or null entry, a NaN, another shape), the general path that says what is wrong with it."""
    try:
        with uncollected():
            entries = GENERATE_ANSWER.decode(content).prompt_logprobs
            if entries is not None and len(entries) == len(ids):
                values = [entries[t][ids[t]].logprob for t in range(1, len(ids))]  # type: ignore[index]
                del entries  # freed while the collector is off: never counted towards its next pass
                return checked_logprobs(values, where)
    except (msgspec.DecodeError, KeyError, TypeError):
        pass
    with uncollected():
        body = answer_json(content, where)
        return token_logprobs(ids, body.get("prompt_logprobs") if isinstance(body, dict) else None, where)


def token_logprobs(seq: list[int], entries: Any, where: str) -> list[float]:
    """log p(seq[t] | seq[:t]) for t >= 1 from vLLM's prompt_logprobs (one {token id: {"logprob": ...}} per
    position, the first null), looked up by token id. Read directly, not through `parse`: a DPO run reads
    millions of these, and a model per entry cost more CPU than the rest of the client together."""
    if not isinstance(entries, list) or len(entries) != len(seq):
        n = len(entries) if isinstance(entries, list) else "no"
        raise ShapeError(f"{where}: unexpected answer: prompt_logprobs has {n} entries for {len(seq)} tokens")
    out = []
    try:
        for t in range(1, len(seq)):
            out.append(entries[t][str(seq[t])]["logprob"])
    except (KeyError, TypeError, IndexError):
        raise ShapeError(f"{where}: unexpected answer: no log-prob for token {seq[t]} at position {t}") from None
    if not all(type(v) is float or type(v) is int for v in out):  # numpy would read "-1.5" or true as a number
        raise ShapeError(f"{where}: unexpected answer: a log-prob that is not a number ({out[:4]})")
    return checked_logprobs(out, where)


def checked_logprobs(out: list[float], where: str) -> list[float]:
    """The log-probs (numbers), or an error for any that is not finite or is above 0."""
    values = np.asarray(out, dtype=np.float64)
    # NaN, +-inf and vLLM's stand-in for -inf: never scored, never stored
    if not ((values > CLAMPED_LOGPROB) & (values < math.inf)).all():
        bad = [v for v in out if not CLAMPED_LOGPROB < v < math.inf]
        raise SampleError(f"{where}: the server returned a non-finite log-prob {bad[:8]}")
    if (values > 0.0).any():  # log_softmax is never above 0
        raise ShapeError(f"{where}: unexpected answer: a log-prob above 0 ({values.max()})")
    return out


async def served_models(ep: Endpoint) -> ModelList:
    """`GET /v1/models`: the names the server serves, with vLLM's root path and max_model_len."""
    return parse(ModelList, await request_json(ep, "GET", "/v1/models"), f"{ep}/v1/models")


async def server_version(ep: Endpoint) -> str | None:
    """`GET /version` (vLLM's release, recorded in the summary's identity); None where a server has no such path
    (an OpenAI-compatible API that is not vLLM)."""
    try:
        body = await request_json(ep, "GET", "/version")
    except EndpointError:
        return None
    version = body.get("version") if isinstance(body, dict) else None
    return version if isinstance(version, str) else None
