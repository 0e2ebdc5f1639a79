"""Typed models of what servers send back, one per endpoint shape (as openai-python types its answers).

`parse(Model, body, where)` validates a decoded answer; a shape that does not match is a ShapeError naming the
endpoint and the field: deterministic, so it is never retried. Unknown fields are ignored (servers add fields).
Floats may be NaN or infinite here: whether a non-finite value is acceptable is the caller's decision.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import msgspec
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from ..errors import ShapeError

M = TypeVar("M", bound=BaseModel)


class Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def _number(value: Any) -> Any:
    """A JSON number only: pydantic's lax mode would also take "1.5" or true for a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    return value


Number = Annotated[float, BeforeValidator(_number)]


def parse(model: type[M], body: Any, where: str) -> M:
    """`body` as `model`; ShapeError('<where>: unexpected answer: field <loc>: <message>') otherwise."""
    try:
        return model.model_validate(body)
    except ValidationError as err:
        first = err.errors()[0]
        # union members and validators appear in `loc` as tags like "function-before[...]": not field names
        loc = ".".join(str(p) for p in first["loc"] if "[" not in str(p)) or "(top level)"
        raise ShapeError(f"{where}: unexpected answer: field {loc}: {first['msg']} ({str(body)[:120]})") from None


# --- OpenAI-compatible model list (vLLM, SGLang, hosted APIs) ---------------------------------------------------
class ModelCard(Shape):
    id: str
    root: str | None = None  # vLLM: the --model path or hub id
    max_model_len: int | None = None


class ModelList(Shape):
    data: list[ModelCard]


# --- vLLM -------------------------------------------------------------------------------------------------------
class PoolingItem(Shape):
    index: int = 0
    data: Number | list[Number] | list[list[Number]]  # one output, the head's outputs, or [[outputs]] (one row)

    @model_validator(mode="after")
    def _not_empty(self) -> PoolingItem:
        if not self.outputs():
            raise ValueError("the head gave no output")
        return self

    def outputs(self) -> list[float]:
        data = self.data
        if isinstance(data, list) and len(data) == 1 and isinstance(data[0], list):
            data = data[0]
        return [float(v) for v in (data if isinstance(data, list) else [data])]  # type: ignore[arg-type]


class PoolingResponse(Shape):
    data: list[PoolingItem]


class TokenizeResponse(Shape):
    tokens: list[int]
    max_model_len: int | None = None


class TokenLogprob(msgspec.Struct):
    """One prompt position's entry (vLLM also sends `rank` and `decoded_token`: skipped unread)."""

    logprob: float


class GenerateAnswer(msgspec.Struct):
    """`/inference/v1/generate` with prompt_logprobs=0: one {token id: entry} per position, the first null.
    msgspec, not pydantic: a DPO run decodes millions of entries, and a typed decode that skips the unused fields
    took half to two thirds of the CPU of orjson plus a lookup (measured by hand, 800-token answers)."""

    prompt_logprobs: list[dict[int, TokenLogprob] | None] | None = None


GENERATE_ANSWER = msgspec.json.Decoder(GenerateAnswer)


# --- TEI --------------------------------------------------------------------------------------------------------
class TeiPrediction(Shape):
    score: Number
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
    logprob: Number | None = None  # the first token has none; TGI writes a NaN as null


class TgiDetails(Shape):
    prefill: list[TgiPrefillToken]


class TgiGenerateResponse(Shape):
    details: TgiDetails


class TgiToken(Shape):
    id: int
    text: str = ""
    start: int | None = None  # equal to stop (zero width) for the special tokens TGI adds
    stop: int | None = None


class TgiChatTokenize(Shape):
    templated_text: str


class TgiInfo(Shape):
    model_id: str
    model_sha: str | None = None
    max_input_tokens: int | None = None
    max_input_length: int | None = None  # TGI 1.x's name
    max_total_tokens: int | None = None


# --- SGLang -----------------------------------------------------------------------------------------------------
class SglangClassifyItem(Shape):
    embedding: list[Number]


class SglangTokenize(Shape):
    tokens: list[int]
