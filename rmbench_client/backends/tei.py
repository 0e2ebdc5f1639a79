"""TEI (text-embeddings-inference): rewards of encoder classifiers (e.g. DeBERTa reward models) from `/predict`.

TEI applies no chat template and always adds the tokenizer's special tokens: the client renders each
conversation, and the reward model kind removes a BOS the template writes literally, after checking with
`/tokenize` how TEI tokenizes a probe. `truncate: false` is always sent, so an input longer than the model's limit
fails as that sample's error instead of being scored cut (TEI's `--auto-truncate` would otherwise cut it
silently). One `/predict` request holds at most `TEI_MAX_BATCH` inputs (TEI's client batch cap): callers chunk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .. import constants as C
from ..errors import EndpointError, SampleError, ShapeError
from .base import Endpoint
from .schemas import TeiInfo, TeiPrediction, TeiToken, parse
from .transport import request_json
from .vllm import finite

_LABEL_INDEX = re.compile(r"LABEL_(\d+)")
_TOO_LONG = re.compile(r"HTTP (413|422)\b")  # request_json's message: TEI's validation / tokenizer errors


class TeiReward:
    """Raw classifier logits (`raw_scores: true`), in label order, one list per input text."""

    adds_special_tokens = True
    max_batch: int | None = C.TEI_MAX_BATCH

    def __init__(self, labels: Sequence[str] | None = None) -> None:
        self.labels = list(labels) if labels is not None else None  # output order of a multi-label head

    async def rewards_for_texts(self, ep: Endpoint, texts: Sequence[str]) -> list[list[float]]:
        """One `/predict` request for up to TEI_MAX_BATCH texts."""
        payload = {"inputs": [[t] for t in texts], "raw_scores": True, "truncate": False}
        try:
            body = await request_json(ep, "POST", "/predict", payload)
        except SampleError as exc:
            if _TOO_LONG.search(str(exc)):
                raise SampleError(f"{exc} (truncation refused: truncate=false, the input is not scored cut)") from None
            raise
        return [self._ordered(item, ep) for item in _per_input(body, len(texts), f"{ep}/predict")]

    async def tokenize(self, ep: Endpoint, text: str) -> list[TeiToken]:
        """How `/predict` tokenizes `text`: special tokens added, as TEI always does."""
        body = await request_json(ep, "POST", "/tokenize", {"inputs": text, "add_special_tokens": True})
        where = f"{ep}/tokenize"
        if isinstance(body, list) and len(body) == 1 and isinstance(body[0], list):
            body = body[0]  # one input: TEI answers a list of token lists
        if not isinstance(body, list):
            raise ShapeError(f"{where}: unexpected answer: expected a list of tokens, got {str(body)[:120]}")
        return [parse(TeiToken, t, where) for t in body]

    async def tokenize_as_scored(self, ep: Endpoint, text: str) -> list[int]:
        return [t.id for t in await self.tokenize(ep, text)]

    def _ordered(self, predictions: list[Any], ep: Endpoint) -> list[float]:
        """The scores in head-output order: TEI sorts predictions by score, so order them by label again."""
        where = f"{ep}/predict"
        pairs = [parse(TeiPrediction, p, where) for p in predictions]
        if len(pairs) > 1:
            pairs.sort(key=lambda p: self._label_rank(p.label, ep))
        return finite([p.score for p in pairs], where)

    def _label_rank(self, label: str, ep: Endpoint) -> int:
        if self.labels is not None:
            if label not in self.labels:
                raise EndpointError(f"{ep}: label {label!r} not among the configured labels {self.labels}")
            return self.labels.index(label)
        match = _LABEL_INDEX.fullmatch(label)
        if match is None:
            # Named labels carry no order we can know: refuse rather than guess which output is which.
            raise EndpointError(
                f"{ep}: the head has named labels ({label!r}, ...), whose order TEI does not report: set id2label to "
                "LABEL_0, LABEL_1, ... in the model's config.json, or serve the model with vLLM"
            )
        return int(match.group(1))


async def tei_info(ep: Endpoint) -> TeiInfo:
    """`GET /info`: the model id and revision TEI serves."""
    return parse(TeiInfo, await request_json(ep, "GET", "/info"), f"{ep}/info")


def _per_input(body: Any, expected: int, where: str) -> list[list[Any]]:
    """Per-input prediction lists from either documented shape: [[{score, label}]] (batch) or [{score, label}]."""
    if not isinstance(body, list) or not body:
        raise ShapeError(f"{where}: unexpected answer: {str(body)[:120]}")
    if all(isinstance(item, list) for item in body):
        items = body
    elif all(isinstance(item, dict) for item in body):
        # One input sent: every entry is one of its labels. Several: one single-label entry per input.
        items = [body] if expected == 1 else [[item] for item in body]
    else:
        raise ShapeError(f"{where}: unexpected answer: a mix of shapes: {str(body)[:120]}")
    if len(items) != expected:
        raise ShapeError(f"{where}: unexpected answer: {len(items)} predictions for {expected} inputs")
    return items
