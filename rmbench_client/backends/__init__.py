"""Server backends: one file per server kind, behind the Protocols of `base`; the tables below pick them. Beside
them: `retry` (when a failed request is retried, and after how long) and `identity` (how each server names its
model)."""

from __future__ import annotations

from .base import LogprobBackend, TextRewardBackend
from .sglang import SglangReward
from .tei import TeiReward
from .tgi import TgiLogprobs
from .vllm import VllmLogprobs, VllmReward

REWARD_BACKENDS: dict[str, type[TextRewardBackend]] = {"vllm": VllmReward, "tei": TeiReward, "sglang": SglangReward}
LOGPROB_BACKENDS: dict[str, type[LogprobBackend]] = {"vllm": VllmLogprobs, "tgi": TgiLogprobs}
JUDGE_BACKENDS = frozenset({"vllm", "sglang", "openai"})  # OpenAI-compatible chat completions
