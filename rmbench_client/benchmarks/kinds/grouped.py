"""What the best-of-N and ranking kinds share: per-prompt values in named groups, and figures that are functions of
a group's column means (an accuracy, a mean reciprocal rank, a ratio of two means), computed per group, over every
prompt (the groups' means weighted by their sizes: every prompt weighs the same) and as the groups' mean (every
group weighs the same), with seeded bootstrap 95% intervals (groups resampled independently, each replicate
combined exactly as the point estimate); the headline columns compare shows, and the rows of the table.

A kind gives `values(records) -> (n, k)` and `figures(means) -> {name: value}` over means of shape (..., k): the
same function turns group means, their pooled means and bootstrap replicates into figures, so `compare`'s
significance test (`headline_numbers`) computes every column exactly as `score` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType

from ...examples import PromptScores
from ..shared import bootstrap
from ..shared.tables import cell_of
from ..spec import Interval, Row, Samples, Summary

Lead = Literal["prompts", "groups"]  # which overall figure leads: every prompt weighs the same, or every group
Figures = Callable[[np.ndarray], dict[str, np.ndarray]]  # column means (..., k) -> named figures (...)
Values = Callable[[Sequence[PromptScores]], np.ndarray]  # records -> per-prompt values (n, k)
Figure = float | None  # None: undefined (a ratio over nothing); `undefined` says why


class GroupedIntervals(msgspec.Struct, kw_only=True):
    """95% intervals of each figure: per group, over every prompt, and of the groups' mean."""

    groups: dict[str, dict[str, Interval]]
    overall: dict[str, Interval]
    macro: dict[str, Interval]


class GroupedSummary(Summary, kw_only=True):
    """Figures per group (`n` prompts each), over every prompt and as the groups' mean, and their intervals. Unset
    only in the summary of a run that scored nothing; a figure over nothing is None and `undefined` says why."""

    groups: dict[str, dict[str, Figure]] = msgspec.field(default_factory=dict)
    n: dict[str, int] = msgspec.field(default_factory=dict)
    overall: dict[str, Figure] | UnsetType = UNSET  # every prompt weighs the same
    macro: dict[str, Figure] | UnsetType = UNSET  # the groups' mean: every group weighs the same
    ci: GroupedIntervals | UnsetType = UNSET
    undefined: dict[str, str] | UnsetType = UNSET


def _figure(value: Any) -> Figure:
    v = float(value)
    return None if math.isnan(v) else v


def _interval(replicates: np.ndarray) -> Interval:
    """The percentile interval over the replicates where the figure is defined ([nan, nan] when it never is)."""
    kept = replicates[~np.isnan(replicates)]
    return bootstrap.interval(kept) if kept.size else [math.nan, math.nan]


def by_group(records: Sequence[PromptScores], values: Values) -> dict[str, np.ndarray]:
    """Each group's per-prompt values, groups in name order."""
    return {name: values(recs) for name, recs in bootstrap.by_group(records).items()}


def pooled(means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> np.ndarray:
    """The column means over every prompt, from the groups' column means and sizes."""
    total = sum(sizes[g] for g in means)
    out: np.ndarray = np.sum([means[g] * (sizes[g] / total) for g in sorted(means)], axis=0)
    return out


def figures_of(
    means: Mapping[str, np.ndarray], sizes: Mapping[str, int], figures: Figures
) -> tuple[dict[str, Any], ...]:
    """(per group, over every prompt, the groups' mean) figures from the groups' column means and sizes."""
    per_group = {g: figures(means[g]) for g in sorted(means)}
    names = next(iter(per_group.values())).keys()
    with np.errstate(invalid="ignore"):  # a group whose figure is undefined makes the groups' mean undefined
        mean = {f: np.mean([per_group[g][f] for g in per_group], axis=0) for f in names}
    return per_group, figures(pooled(means, sizes)), mean


@dataclass(frozen=True)
class Grouped:
    """A kind's figures: `values` per prompt, `figures` from column means; `primary` is the figure of the groups'
    own columns (accuracy), the others are shown beside it."""

    values: Values
    figures: Figures
    names: tuple[str, ...]  # the figures, primary first
    summary: type[GroupedSummary] = GroupedSummary  # what `score` returns
    why: Mapping[str, str] = field(default_factory=dict)  # why each figure can be undefined
    # what a kind adds to the summary from the records (the ranking kind: its rated pairs)
    finish: Callable[[Any, Sequence[PromptScores]], None] | None = None

    # --- the kind's numbers (spec.Numbers): the accuracy over every prompt leads ---------------------------------

    @property
    def SUMMARY(self) -> type[GroupedSummary]:  # noqa: N802 (spec.Numbers' name)
        return self.summary

    @property
    def prompt_values(self) -> Values:
        """compare's per-prompt values: their group means give every figure (`headline_numbers`)."""
        return self.values

    def score(self, records: Sequence[PromptScores], seed: int = 0, samples: Samples = None,
              lengths: Any = None, *, benchmark: str = "") -> GroupedSummary:  # fmt: skip
        """The summary of the records: figures per group, over every prompt and as the groups' mean, with 95%
        intervals, and why any figure is undefined."""
        out = self.summarize(records, self.summary, benchmark, seed, samples)
        if self.finish is not None:
            self.finish(out, records)
        out.undefined = undefined(out, self.why) or UNSET
        return out

    def headline(self, summary: GroupedSummary) -> list[tuple[str, float | None]]:
        return self.columns_of(summary, "prompts")

    def headline_intervals(self, summary: GroupedSummary) -> dict[str, Interval]:
        return self.intervals(summary, "prompts")

    @property
    def primary(self) -> str:
        return self.names[0]

    def column(self, figure: str, over: Lead) -> str:
        """A headline column's name: the figure over every prompt ("accuracy", "mrr"), or as the groups' mean
        ("macro", as the pairs kind names its macro accuracy; "macro mrr")."""
        if over == "prompts":
            return figure
        return "macro" if figure == self.primary else f"macro {figure}"

    def columns(self, lead: Lead) -> list[tuple[str, str, Lead]]:
        """(column, figure, over) of the overall figures in compare's order: the others, then the primary figure
        of the other weighting, then the one that leads."""
        other: Lead = "groups" if lead == "prompts" else "prompts"
        both: tuple[Lead, Lead] = ("prompts", "groups")
        rest = [(f, over) for f in self.names[1:] for over in both]
        return [(self.column(f, o), f, o) for f, o in (*rest, (self.primary, other), (self.primary, lead))]

    def summarize(self, records: Sequence[PromptScores], summary: type[GroupedSummary], benchmark: str, seed: int,
                  samples: Samples) -> GroupedSummary:  # fmt: skip
        """The summary (of this type): figures per group, over every prompt and as the groups' mean, with 95%
        intervals."""
        values = by_group(records, self.values)
        out = summary(benchmark=benchmark, n={g: len(v) for g, v in values.items()})
        if not values:
            return out
        means = {g: v.mean(axis=0) for g, v in values.items()}
        per_group, _, mean = figures_of(means, out.n, self.figures)
        prompts = self.figures(np.concatenate(list(values.values())).mean(axis=0))  # every prompt's values at once
        out.groups = {g: {f: _figure(v) for f, v in figs.items()} for g, figs in per_group.items()}
        out.overall = {f: _figure(v) for f, v in prompts.items()}
        out.macro = {f: _figure(v) for f, v in mean.items()}
        rng = bootstrap.rng(seed)
        kwargs = {} if samples is None else {"samples": samples}
        reps = {g: bootstrap.replicate_means(v, rng, **kwargs) for g, v in values.items()}
        rep_groups, rep_prompts, rep_mean = figures_of(reps, out.n, self.figures)
        out.ci = GroupedIntervals(
            groups={g: {f: _interval(r) for f, r in figs.items()} for g, figs in rep_groups.items()},
            overall={f: _interval(r) for f, r in rep_prompts.items()},
            macro={f: _interval(r) for f, r in rep_mean.items()},
        )
        return out

    def columns_of(self, summary: GroupedSummary, lead: Lead) -> list[tuple[str, float | None]]:
        """compare's columns: each group's primary figure, then the overall figures; the last leads."""
        ends = {"prompts": summary.overall, "groups": summary.macro}
        head = [(g, figs.get(self.primary)) for g, figs in summary.groups.items()]
        tail = [(col, figs.get(f)) for col, f, over in self.columns(lead)
                if not isinstance(figs := ends[over], UnsetType)]  # fmt: skip
        return head + tail

    def headline_of(self, lead: Lead) -> Callable[[Any], list[tuple[str, float | None]]]:
        """A kind's `headline` with the figure over every prompt ("prompts") or the groups' mean ("groups") leading."""
        return lambda summary: self.columns_of(summary, lead)

    def intervals_of(self, lead: Lead) -> Callable[[Any], dict[str, Interval]]:
        """A kind's `headline_intervals`, of the same columns."""
        return lambda summary: self.intervals(summary, lead)

    @staticmethod
    def scored_groups(summary: GroupedSummary) -> list[str]:
        return list(summary.groups)

    def intervals(self, summary: GroupedSummary, lead: Lead) -> dict[str, Interval]:
        ci = summary.ci
        if isinstance(ci, UnsetType):
            return {}
        ends = {"prompts": ci.overall, "groups": ci.macro}
        out = {g: figs[self.primary] for g, figs in ci.groups.items() if self.primary in figs}
        return out | {col: ends[over][f] for col, f, over in self.columns(lead) if f in ends[over]}

    def headline_numbers(self, means: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
        """compare's columns from the groups' column means (..., k) and sizes, as `score` computes them."""
        per_group, prompts, mean = figures_of(means, sizes, self.figures)
        out = {g: figs[self.primary] for g, figs in per_group.items()}
        ends = {"prompts": prompts, "groups": mean}
        return out | {col: ends[over][f] for col, f, over in self.columns("prompts")}

    def rows(self, summary: GroupedSummary) -> tuple[list[str], list[Row]]:
        """A column per figure; a row per group, then every prompt and the groups' mean."""
        ci = None if isinstance(summary.ci, UnsetType) else summary.ci
        n = summary.n

        def cells(figs: Mapping[str, Figure], intervals: Mapping[str, Interval] | None) -> list[list[float] | None]:
            return [cell_of(figs.get(f), (intervals or {}).get(f)) for f in self.names]

        rows: list[Row] = [{"name": g, "values": cells(figs, ci.groups.get(g) if ci else None), "n": n.get(g),
                            "total": False} for g, figs in summary.groups.items()]  # fmt: skip
        totals = (("all prompts", summary.overall, ci.overall if ci else None, sum(n.values())),
                  ("mean of groups", summary.macro, ci.macro if ci else None, None))  # fmt: skip
        for name, figs, intervals, count in totals[: 1 if len(summary.groups) == 1 else 2]:  # one group: one mean
            if not isinstance(figs, UnsetType):
                rows.append({"name": name, "values": cells(figs, intervals), "n": count, "total": True})
        return list(self.names), rows


def undefined(summary: GroupedSummary, why: Mapping[str, str]) -> dict[str, str]:
    """Each None figure of the summary by its name (`<group>/<figure>`, `<figure>`, `macro <figure>`), with the
    reason `why` gives for the figure."""
    out = {f"{g}/{f}": why[f] for g, figs in summary.groups.items() for f, v in figs.items() if v is None}
    for label, figs in (("", summary.overall), ("macro ", summary.macro)):
        if not isinstance(figs, UnsetType):
            out |= {f"{label}{f}": why[f] for f, v in figs.items() if v is None}
    return out
