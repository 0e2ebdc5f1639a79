"""A process reward model's step scores turned into one score per solution, as RewardMATH's `src/evaluation/eval.py`
(kimsh0507/RewardMATH_official at cde06ab, `RewardMATHEvaluation._calculate_final_reward`) offers them, its
`--prm_function` choices:

    min, max, last        min(steps), max(steps), steps[-1]            Python's own (a NaN counts by its position)
    prod                  s_1 * s_2 * ... * s_n                        one after another, from 1
    geometric_mean        prod ** (1 / n)
    mean                  (s_1 + ... + s_n) / n                        summed one after another, from 0
    mean_logit            sigmoid(mean(log(p / (1 - p))))              numpy's log, mean and exp
    mean_odd              max(0, mean(p / (1 - p)))                    numpy's mean

Each is computed in the order and with the arithmetic upstream uses, so a figure equals upstream's to the last bit
(sums left to right: Python 3.12's `sum` compensates float rounding, upstream's Python did not). A step probability
of 1 makes an odd infinite, as upstream's numpy does (its warning is not repeated here).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import DataError


def plain_sum(values: Sequence[Any]) -> Any:
    """The values (numbers, or arrays of them alike) summed one after another from 0, as Python before 3.12 sums
    floats."""
    return functools.reduce(operator.add, values, 0)


def _prod(steps: Sequence[float]) -> float:
    return float(functools.reduce(operator.mul, steps, 1))


def _mean_logit(steps: Sequence[float]) -> float:
    p = np.array(steps)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(1 / (1 + np.exp(-np.mean(np.log(p / (1 - p))))))


def _mean_odd(steps: Sequence[float]) -> float:
    p = np.array(steps)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.maximum(0, np.mean(p / (1 - p))))


AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "min": lambda s: float(min(s)),
    "max": lambda s: float(max(s)),
    "prod": _prod,
    "geometric_mean": lambda s: float(_prod(s) ** (1 / len(s))),
    "mean": lambda s: float(plain_sum(s)) / len(s),
    "mean_logit": _mean_logit,
    "mean_odd": _mean_odd,
    "last": lambda s: float(s[-1]),
}
NAMES = tuple(AGGREGATES)  # upstream's order (evaluate_results.py's func_list)


def aggregate(steps: Sequence[float], name: str, where: str = "") -> float:
    """One score of a solution's step scores by the aggregation `name`; a DataError for no step or no such name."""
    if name not in AGGREGATES:
        raise DataError(f"unknown step aggregation {name!r} (known: {', '.join(NAMES)})")
    if not steps:
        raise DataError(f"{where or 'a solution'}: no step score to aggregate")
    return AGGREGATES[name](steps)
