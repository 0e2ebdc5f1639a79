"""Typed models of what servers send back, one per endpoint shape (as openai-python types its answers).

`parse(Model, body, where)` validates a decoded answer; a shape that does not match is a ShapeError naming the
endpoint and the field: deterministic, so it is never retried. Unknown fields are ignored (servers add fields).
Floats may be NaN or infinite here: whether a non-finite value is acceptable is the caller's decision.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import msgspec

from ..errors import ShapeError, located

M = TypeVar("M", bound="Shape")


class Shape(msgspec.Struct, kw_only=True):
    """An answer's shape (msgspec: unknown fields are skipped). A float field takes a JSON number only: a string
    such as "1.5", or true, is an error, not a number."""


def parse(model: type[M], body: Any, where: str) -> M:
    """`body` as `model`; ShapeError('<where>: unexpected answer: field <loc>: <message>') otherwise."""
    try:
        return msgspec.convert(body, model)
    except msgspec.ValidationError as err:
        loc, message = located(str(err))
        loc = loc or "(top level)"
        raise ShapeError(f"{where}: unexpected answer: field {loc}: {message} ({str(body)[:120]})") from None


# --- OpenAI-compatible model list (vLLM, SGLang, hosted APIs) ---------------------------------------------------
class ModelCard(Shape):
    id: str
    root: str | None = None  # vLLM: the --model path or hub id
    max_model_len: int | None = None


class ModelList(Shape):
    data: list[ModelCard]


# --- OpenAI-compatible chat completions (a generative judge) -----------------------------------------------------
class ChatMessage(Shape):
    content: str | None = None  # null where the whole answer went into the thinking (vLLM's reasoning parsers)
    reasoning: str | None = None  # vLLM's thinking, split off by its --reasoning-parser
    reasoning_content: str | None = None  # the same, as older vLLM releases (and DeepSeek's API) name it


class ChatChoice(Shape, kw_only=True):
    index: int = 0
    message: ChatMessage  # required: a choice without one (`"message": null`) is no answer
    finish_reason: str | None = None  # "length": cut off at max_tokens


class CompletionTokensDetails(Shape):
    reasoning_tokens: int | None = None  # vLLM reports it when a reasoning parser runs


class ChatUsage(Shape):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    completion_tokens_details: CompletionTokensDetails | None = None


class ChatCompletion(Shape):
    choices: list[ChatChoice]
    usage: ChatUsage | None = None


# --- vLLM -------------------------------------------------------------------------------------------------------
class PoolingItem(Shape, kw_only=True):
    index: int = 0
    # one output, the head's outputs, or [[outputs]] (one row); msgspec takes one array type in a union, so the
    # row form is told apart after reading
    data: float | list[float | list[float]]

    def __post_init__(self) -> None:
        data = self.data
        if isinstance(data, list) and any(isinstance(v, list) for v in data):
            if len(data) != 1 or not isinstance(data[0], list):
                raise ValueError("expected numbers, or one row of numbers")
        if not self.outputs():
            raise ValueError("the head gave no output")

    def outputs(self) -> list[float]:
        data: Any = self.data
        if isinstance(data, list) and len(data) == 1 and isinstance(data[0], list):
            data = data[0]
        return [float(v) for v in (data if isinstance(data, list) else [data])]


class PoolingResponse(Shape):
    data: list[PoolingItem]


class TokenizeResponse(Shape):
    tokens: list[int]
    max_model_len: int | None = None


class TokenLogprob(msgspec.Struct, gc=False):
    """One prompt position's entry (vLLM also sends `rank` and `decoded_token`: skipped unread). Untracked by the
    cycle collector, as it holds one float: the decode is about 8 % faster (measured by hand, 1,500-token answers)."""

    logprob: float


class GenerateAnswer(msgspec.Struct, gc=False):
    """`/inference/v1/generate` with prompt_logprobs=0: one {token id: entry} per position, the first null.
    Decoded from the bytes, not through `parse`: a DPO run decodes millions of entries, and a typed decode that
    skips the unused fields took half to two thirds of the CPU of orjson plus a lookup (measured by hand,
    800-token answers)."""

    prompt_logprobs: list[dict[int, TokenLogprob] | None] | None = None


GENERATE_ANSWER = msgspec.json.Decoder(GenerateAnswer)


@contextmanager
def uncollected() -> Iterator[None]:
    """No cycle collection while a log-prob answer is decoded and read. Its thousands of short-lived dicts hold
    no cycles, yet each one counts towards the collector's next pass, and those passes scanned them again and
    again: a fifth of a DPO run's client CPU (measured with gc.callbacks). Objects freed again are uncounted."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


# --- TEI --------------------------------------------------------------------------------------------------------
class TeiPrediction(Shape):
    score: float
    label: str


class TeiToken(Shape):
    id: int
    text: str = ""
    special: bool = False


class TeiInfo(Shape):
    model_id: str
    model_sha: str | None = None
    max_input_length: int | None = None


# --- TGI --------------------------------------------------------------------------------------------------------
class TgiPrefillToken(Shape):
    id: int
    text: str = ""
    logprob: float | None = None  # the first token has none; TGI writes a NaN as null


class TgiDetails(Shape):
    prefill: list[TgiPrefillToken]


class TgiGenerateResponse(Shape):
    details: TgiDetails


class TgiToken(Shape):
    id: int
    text: str = ""
    start: int | None = None  # equal to stop (zero width) for the special tokens TGI adds
    stop: int | None = None


class TgiInfo(Shape):
    model_id: str
    model_sha: str | None = None
    max_input_tokens: int | None = None
    max_input_length: int | None = None  # TGI 1.x's name
    max_total_tokens: int | None = None


# --- SGLang -----------------------------------------------------------------------------------------------------
class SglangClassifyItem(Shape):
    embedding: list[float]


class SglangTokenize(Shape):
    tokens: list[int]
