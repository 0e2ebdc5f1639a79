"""RewardMATH, as its own code scores it (kimsh0507/RewardMATH_official at cde06ab, `src/evaluation/eval.py`,
`RewardMATHEvaluation`, run by `src/evaluate_results.py --eval_mode our_reward`).

A problem's scores: its chosen solution's (upstream: those whose solution_reference is human_to_GPT-4) and its
rejected ones', in file order.
    correct_p      = [ min(chosen) > max(rejected) ]          strict: a tie is wrong ("reward Acc")
    correct_ties_p = [ min(chosen) >= max(rejected) ]         a tie is right ("reward Acc (w/ tie)")
    rank_p         = 1 + the position of the first chosen score among all sorted from the highest, a rejected
                     score before a chosen one it equals (upstream sorts (score, "rej"/"cho") pairs descending)
    mrr_p          = 1 / rank_p                                ("reward MRR")
    accuracy, accuracy w/ ties, mrr = their sums over the problems / the number of problems
min, max and the sort are Python's own, as upstream's (a NaN counts by its position); the sums are taken one after
another in record order, as upstream's Python summed them, so each figure equals upstream's to the last bit (the
problems of a result file are counted as often as they appear: three published files hold two problems twice).
A pairwise judge (upstream's `--pairwise`): a problem's chosen score is 1 + its wins over the rejected solutions,
a rejected one's 1 where the chosen won and (comparisons + 2) where not (a tie or no verdict is no win).
A PRM's step scores (`prm_function=`: upstream's `--prm_function`) become one score per solution by the chosen
aggregation (shared/step_aggregates.py); `aggregations` gives the three figures for every aggregation, as
upstream's `--prm_mode` prints them.
Per subject (the MATH subjects; upstream reports no breakdown) the same figures with 95% bootstrap intervals over
the subject's problems (kinds/grouped.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from msgspec import UNSET

from ...errors import DataError
from ...examples import PromptScores
from ..kinds.grouped import Grouped, undefined
from ..shared.step_aggregates import NAMES, aggregate, plain_sum
from ..spec import Lengths, Records, Samples
from .constants import NAME
from .summary import RewardMathSummary

SUMMARY = RewardMathSummary
ACCURACY, MRR, TIES = "accuracy", "mrr", "accuracy w/ ties"


def outcome(chosen: Sequence[float], rejected: Sequence[float]) -> tuple[bool, bool, float]:
    """(correct, correct with ties, reciprocal rank) of one problem's scores, as upstream computes them."""
    ordered = sorted([(s, "rej") for s in rejected] + [(s, "cho") for s in chosen], reverse=True)
    rank = next(i for i, (_, side) in enumerate(ordered, 1) if side == "cho")
    return min(chosen) > max(rejected), min(chosen) >= max(rejected), 1 / rank


def judged(results: Sequence[float]) -> tuple[list[float], list[float]]:
    """A pairwise judge's credits as upstream's pairwise scores: (chosen, rejected)."""
    wins = [c == 1.0 for c in results]
    return [float(sum(wins) + 1)], [1.0 if w else float(len(wins) + 2) for w in wins]


def sides(rec: PromptScores, prm_function: str | None) -> tuple[list[float], list[float]]:
    """A problem's (chosen, rejected) scores: its own, a judge's as upstream's pairwise scores, or its step scores
    aggregated."""
    if rec.results is not None:
        return judged(rec.results)
    if prm_function is not None and rec.response_steps is not None:
        n = len(rec.chosen) if rec.chosen else 1
        scores = [aggregate(s, prm_function, f"prompt {rec.id}") for s in rec.response_steps]
        return scores[:n], scores[n:]
    if rec.response_steps is not None and not rec.chosen:
        raise DataError(f"prompt {rec.id}: step scores: choose how a solution's step scores become one "
                        f"(--prm-function: {', '.join(NAMES)})")  # fmt: skip
    if not rec.chosen or not rec.rejected:
        raise DataError(f"prompt {rec.id}: needs a chosen score and rejected ones")
    return list(rec.chosen), list(rec.rejected)


def outcomes(records: Sequence[PromptScores], prm_function: str | None = None) -> np.ndarray:
    """(n, 3) per problem: correct, reciprocal rank, correct with ties."""
    out = [outcome(*sides(r, prm_function)) for r in records]
    return np.asarray([(float(c), rr, float(t)) for c, t, rr in out], dtype=np.float64).reshape(len(records), 3)


def _figures(means: np.ndarray) -> dict[str, np.ndarray]:
    return {ACCURACY: means[..., 0], MRR: means[..., 1], TIES: means[..., 2]}


FIGURES = Grouped(outcomes, _figures, (ACCURACY, MRR, TIES))
WHY = dict.fromkeys(FIGURES.names, "no problem scored")


def upstream_figures(values: np.ndarray) -> dict[str, float]:
    """The figures over every problem as upstream sums them (one after another, in record order)."""
    n = len(values)
    return {f: float(plain_sum(values[:, k].tolist())) / n for k, f in enumerate(FIGURES.names)}


def score(
    records: Records,
    seed: int = 0,
    samples: Samples = None,
    lengths: Lengths | None = None,
    prm_function: str | None = None,
) -> RewardMathSummary:
    """Summary: accuracy, mrr and accuracy with ties over every problem (as upstream) and per subject, with 95%
    intervals; with step scores, each aggregation's figures too."""
    chosen = [replace(r, chosen=tuple(c), rejected=tuple(j)) for r in records for c, j in [sides(r, prm_function)]]
    summary = FIGURES.summarize(chosen, RewardMathSummary, NAME, seed, samples)
    assert isinstance(summary, RewardMathSummary)
    if chosen:
        summary.overall = {f: v for f, v in upstream_figures(outcomes(chosen)).items()}
    steps = [r for r in records if r.response_steps is not None]
    if steps and len(steps) == len(records):
        summary.aggregations = {f: upstream_figures(outcomes(records, f)) for f in NAMES}
    if prm_function is not None:
        summary.prm_function = prm_function
    summary.undefined = undefined(summary, WHY) or UNSET
    return summary


def prompt_values(records: Sequence[PromptScores]) -> np.ndarray:
    """(n, 3) per problem: correct, reciprocal rank, correct with ties (compare's significance)."""
    return outcomes(records)


headline_numbers = FIGURES.headline_numbers
# compare's columns: each subject's accuracy, the mrr and accuracy with ties, then the accuracy over every problem
# (upstream's "reward Acc"), which leads
headline = FIGURES.headline
headline_intervals = FIGURES.headline_intervals
scored_groups = FIGURES.scored_groups
