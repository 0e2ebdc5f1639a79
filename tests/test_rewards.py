"""Turning raw backend numbers into one score: multi-output heads and the DPO reward modes."""

from __future__ import annotations

import math

import pytest

from rmbench_client.backends.vllm import VllmReward
from rmbench_client.config.schema import RewardOptions, RoleConfig
from rmbench_client.errors import ConfigError
from rmbench_client.model_kinds.dpo import reduce, reduce_value, summarize
from rmbench_client.model_kinds.reward import RewardModel

ROLE = RoleConfig(served_model="rm", endpoints=["http://127.0.0.1:1"])


def scorer(**options) -> RewardModel:
    return RewardModel(None, ROLE, RewardOptions(**options), VllmReward(), None, {})  # type: ignore[arg-type]


def test_head_index_and_weights():
    outputs = [0.5, -2.0, 4.0]
    assert scorer().reduce(outputs) == 0.5
    assert scorer(head_index=2).reduce(outputs) == 4.0
    assert math.isclose(scorer(head_weights=[1.0, 0.5, 0.25]).reduce(outputs), 0.5 - 1.0 + 1.0)
    with pytest.raises(ConfigError, match="head_index is 3"):
        scorer(head_index=3).reduce(outputs)
    with pytest.raises(ConfigError, match="2 weights"):
        scorer(head_weights=[1.0, 1.0]).reduce(outputs)


def test_dpo_reward_modes():
    policy, reference = [-1.0, -2.0, -2.0], [-0.5, -1.5, -3.0]
    assert math.isclose(reduce("ratio", policy, reference), -5.0 + 5.0)
    assert math.isclose(reduce("sum", policy, None), -5.0)
    assert math.isclose(reduce("avg", policy, None), -5.0 / 3)
    assert math.isclose(reduce("norm", policy, None), -3.0)
    assert reduce("sum", [], None) == 0.0


def test_dpo_stored_value_holds_what_every_mode_needs():
    policy, reference = [-1.0, -2.0, -2.0], [-0.5, -1.5, -3.0]
    value = summarize(policy, reference)
    assert value == {"tokens": 3, "policy_sum": -5.0, "policy_sumsq": 9.0, "reference_sum": -5.0}
    for mode in ("ratio", "sum", "avg", "norm"):
        assert math.isclose(reduce_value(mode, value), reduce(mode, policy, reference if mode == "ratio" else None))
