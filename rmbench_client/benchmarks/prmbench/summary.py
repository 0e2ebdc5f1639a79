"""PRMBench's summary as `score` returns it and `summary.json` begins: its fields in the order they are written."""

from __future__ import annotations

import msgspec

from ..spec import Summary


class Counts(msgspec.Struct, kw_only=True):
    """An error class's pooled step counts, "correct" the positive."""

    TP: int
    FP: int
    TN: int
    FN: int


class ClassDetail(msgspec.Struct, kw_only=True):
    """One error class: its solutions and scored steps, their counts and F1s (upstream's -1 where undefined), and
    the accuracies on correct and on erroneous steps (None where it has none of them)."""

    n: int
    steps: int
    counts: Counts
    f1: float
    negative_f1: float
    correct_step_acc: float | None
    wrong_step_acc: float | None


class Intervals(msgspec.Struct, kw_only=True):
    """95% intervals of the classes', groups' and overall PRMScores (each always a number: upstream's F1 is -1
    where undefined)."""

    classes: dict[str, list[float]]
    groups: dict[str, list[float]]
    overall: list[float]


class Cut(msgspec.Struct, kw_only=True):
    """Solutions whose scores stop before their last step, and the steps not counted."""

    solutions: int
    steps: int
    why: str


class PRMBenchSummary(Summary, kw_only=True):
    """PRMScore per error class, group and overall, each class's details, the steps scored, 95% intervals; `cut`
    only when some solution's scores stop early; `undefined` only when a class's F1 or accuracy is (its reason)."""

    threshold: float
    classes: dict[str, float]
    groups: dict[str, float]
    overall: float
    n: dict[str, int]
    details: dict[str, ClassDetail]
    steps_scored: int
    ci: Intervals
    cut: Cut | msgspec.UnsetType = msgspec.UNSET
    undefined: dict[str, str] | msgspec.UnsetType = msgspec.UNSET  # `<class>/f1` ... -> why (`undefined_reasons`)
