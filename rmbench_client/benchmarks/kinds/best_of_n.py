"""The best-of-N kind: one chosen response ranked among several rejected ones per prompt, in named groups (a best-of-N
set of your own, RewardMATH with numbers of its own).

correct_p = [ s_chosen > s_r for every rejected r ]       strict: a tie with any rejected response is wrong
rank_p    = 1 + #{ r : s_r >= s_chosen }                  a tie is ranked against the chosen response
mrr_p     = 1 / rank_p
A pairwise judge compares the chosen response with each rejected one: correct when it prefers the chosen one in
every comparison (credit 1; a tie, 0.5, or a loss is no win), rank 1 + the comparisons it did not win.
accuracy and mrr: means of correct_p and mrr_p per group, over every prompt, and as the groups' mean; the headline is
the accuracy over every prompt (a benchmark may lead with the groups' mean instead: `headline_of`).
Intervals: groups resampled independently, each replicate combined exactly as the point estimate (grouped.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.credits import finite_matrix
from ..shared.lines import credit_value, floats, text_field
from ..shared.tables import rows_table
from ..spec import Row
from .grouped import Grouped, GroupedSummary

if TYPE_CHECKING:  # rich is imported where a table is drawn
    from rich.table import Table


class BestOfNSummary(GroupedSummary, kw_only=True):
    """A best-of-N benchmark's summary: accuracy and mrr per group (`groups`), over every prompt (`overall`) and as
    the groups' mean (`macro`), with their 95% intervals (`ci`)."""


def outcome(rec: PromptScores) -> tuple[float, float]:
    """(correct, reciprocal rank) of one prompt: its chosen score against each rejected one, or a judge's credits
    of the chosen response against each rejected one."""
    if rec.results is not None:
        credits = finite_matrix([rec.results], [rec.id], "results", len(rec.results))[0]
        if not len(credits) or ((credits < 0) | (credits > 1)).any():
            raise DataError(f"prompt {rec.id}: a judge's results must be credits in [0, 1], one per rejected answer")
        return float(np.all(credits == 1.0)), 1.0 / (1 + int(np.sum(credits < 1.0)))
    if len(rec.chosen) != 1 or not rec.rejected:
        raise DataError(f"prompt {rec.id}: a best-of-N prompt needs one chosen score and at least one rejected one, "
                        f"has {len(rec.chosen)} and {len(rec.rejected)}")  # fmt: skip
    chosen = finite_matrix([rec.chosen], [rec.id], "score_chosen", 1)[0, 0]
    rejected = finite_matrix([rec.rejected], [rec.id], "scores_rejected", len(rec.rejected))[0]
    return float(chosen > rejected.max()), 1.0 / (1 + int(np.sum(rejected >= chosen)))


def prompt_values(records: Sequence[PromptScores]) -> np.ndarray:
    """(n, 2) per prompt: correct and reciprocal rank; their means over a group are its accuracy and mrr."""
    return np.asarray([outcome(r) for r in records], dtype=np.float64).reshape(len(records), 2)


def _figures(means: np.ndarray) -> dict[str, np.ndarray]:
    return {"accuracy": means[..., 0], "mrr": means[..., 1]}


# the kind's numbers (spec.Numbers): `score`, `headline` (the accuracy over every prompt leads; `headline_of("groups")`
# leads with the groups' mean), `headline_intervals`, `prompt_values`, `headline_numbers`, `scored_groups`
NUMBERS = Grouped(prompt_values, _figures, ("accuracy", "mrr"), BestOfNSummary,
                  {"accuracy": "no prompt scored", "mrr": "no prompt scored"})  # fmt: skip


# --- the per-sample line ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lines:
    """A benchmark of this kind's line and its reader:
    `{"benchmark", "id", <group field>, "score_chosen": s, "scores_rejected": [s, ...]}`, or a judge's
    `"results"`: its credit of the chosen response against each rejected one, in their order."""

    benchmark: str
    group_field: str

    def line(self, example: Example, scores: PromptScores) -> dict[str, Any]:
        rec: dict[str, Any] = {"benchmark": self.benchmark, "id": example.id, self.group_field: example.group}
        if scores.results is not None:
            return rec | {"results": list(scores.results)}
        return rec | {"score_chosen": scores.chosen[0], "scores_rejected": list(scores.rejected)}

    def read(self, rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
        """The scores of a line this benchmark wrote; None for a record of another."""
        if rec.get("benchmark") != self.benchmark:
            return None
        rid, group = text_field(rec, "id", where), text_field(rec, self.group_field, where)
        if rec.get("results") is not None:
            return PromptScores(rid, group, (), (), credit_value(rec["results"], where))
        missing = [k for k in ("score_chosen", "scores_rejected") if k not in rec]
        if missing:
            raise DataError(f"{where}: missing key '{missing[0]}' (and no 'results')")
        chosen = floats(rec["score_chosen"], where, "score_chosen")
        if len(chosen) != 1:
            raise DataError(f"{where}: 'score_chosen' must be one score")
        return PromptScores(rid, group, chosen, floats(rec["scores_rejected"], where, "scores_rejected"))


# --- the table ----------------------------------------------------------------------------------------------


def rows(summary: BestOfNSummary) -> tuple[list[str], list[Row]]:
    """Accuracy and mrr: a row per group, then every prompt and the groups' mean."""
    return NUMBERS.rows(summary)


def _caption(summary: BestOfNSummary) -> str:
    return "accuracy: the chosen answer scored above every rejected one (a tie is wrong); mrr: 1 / its rank"


table: Callable[[BestOfNSummary, str], Table] = rows_table(rows, "group", _caption)
