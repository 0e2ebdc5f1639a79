"""argparse types of the flags' values: a value out of range is refused before anything runs (argparse's usage
and one error line naming the flag, exit 2), never found later in a traceback."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _number(text: str, inside: Callable[[float], bool], what: str) -> float:
    """`text` as a float that `inside` accepts, else argparse's error saying the value is not `what`."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")  # accepted by no range
    if not inside(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def unit_interval(text: str) -> float:
    return _number(text, lambda v: 0.0 <= v <= 1.0, "a number from 0 to 1")


def seconds(text: str) -> float:
    return _number(text, lambda v: 0.0 < v < math.inf, "a number of seconds above 0")


def seconds_or_zero(text: str) -> float:
    return _number(text, lambda v: 0.0 <= v < math.inf, "a number of seconds, 0 or more")


def seed(text: str) -> int:
    """A seed numpy's generators take: an integer, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed (an integer, 0 or more)")
    return value


def non_negative(text: str) -> float:
    return _number(text, lambda v: 0.0 <= v < math.inf, "a number, 0 or more")
