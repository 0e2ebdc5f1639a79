"""vLLM's native process reward models (`Qwen2ForProcessRewardModel`): step-tag pooling on `/pooling`.

The server is started with the step tag's id in its pooler config (`--pooler-config '{"step_tag_id": N}'`); for a
token-id input it answers one pair per occurrence of that token, in order: the softmax of the head's two outputs,
the second the probability that the step is right (vLLM's StepPool then the token-classify head's softmax,
`model_executor/layers/pooler/tokwise/`). Token ids go out as they are: the model kind has already counted the
step tags in them and cut them at the length limit, so the answer can be checked pair for pair.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ShapeError
from .base import Endpoint
from .schemas import Shape, parse
from .transport import request_json
from .vllm import VllmTokenizer, finite

# how far a pair may be from summing to 1: a server whose pooler skips the softmax answers raw logits
PAIR_SUM_TOLERANCE = 1e-3


class StepItem(Shape, kw_only=True):
    index: int = 0
    data: list[list[float]]  # one [wrong, right] pair per step tag


class StepResponse(Shape):
    data: list[StepItem]


def right_probabilities(pairs: list[list[float]], where: str) -> list[float]:
    """The second value of each pair, after checking that every pair is a probability distribution over two."""
    out = []
    for pair in pairs:
        if len(pair) != 2:
            raise ShapeError(f"{where}: unexpected answer: a step's values {pair[:4]} are not a pair (a PRM's head "
                             "has two outputs)")  # fmt: skip
        finite(pair, where, "step probability")
        if abs(pair[0] + pair[1] - 1.0) > PAIR_SUM_TOLERANCE or min(pair) < 0.0:
            raise ShapeError(f"{where}: unexpected answer: the step values {pair} are not probabilities (a pooler "
                             "without its softmax?)")  # fmt: skip
        out.append(float(pair[1]))
    return out


class VllmStepRewards(VllmTokenizer):
    """Per-step probabilities of token-id sequences from the step-tag pooler."""

    async def step_probabilities(self, ep: Endpoint, ids: list[int]) -> list[float]:
        """One sequence in one request: the probability that each step (each step-tag token, in order) is right.
        `use_activation` is asked for: a server whose pooler config turns it off would send logits."""
        payload: dict[str, Any] = {"model": ep.model, "input": [ids], "use_activation": True,
                                   "add_special_tokens": False}  # fmt: skip
        where = f"{ep}/pooling"
        body = await request_json(ep, "POST", "/pooling", payload)
        if isinstance(body, dict) and isinstance(body.get("data"), list):
            for item in body["data"]:  # no step tag: vLLM answers an empty list, which the model below reads
                if isinstance(item, dict) and item.get("data") == []:
                    return []
        response = parse(StepResponse, body, where)
        if len(response.data) != 1:
            raise ShapeError(f"{where}: unexpected answer: {len(response.data)} results for 1 input")
        return right_probabilities(response.data[0].data, where)


def step_probability(good: float, bad: float) -> float:
    """p(good) / (p(good) + p(bad)) from the two log-probs: the softmax of the two, as Math-Shepherd reads a step."""
    return 1.0 / (1.0 + math.exp(bad - good))
