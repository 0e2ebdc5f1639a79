"""JudgeBench's accuracy, as its own code computes it (ScalerLab/JudgeBench `utils/metrics.py`,
`compute_final_metrics`, and `utils/judges.py`'s reward-model judges, at commit 12a499c).

A reward model (or a DPO policy's implicit reward) judges a pair by its two scores: the response scored strictly
higher wins ('A>B' if score_A > score_B else 'B>A'). JudgeBench judges each pair twice, the responses swapped the
second time, and counts a pair correct when the decisions that agree with the label outnumber those that
contradict it: with scores, a pair is correct exactly when the correct response scores strictly higher (equal
scores give one decision each way: not correct). Accuracy is correct pairs over all pairs, per category and
overall (every pair weighs the same: `n_correct / n_pairs`); the macro average over categories is also given.
Intervals: bootstrap over pairs within categories, as for every one-pair benchmark here.
"""

from __future__ import annotations

from ..kinds.pairs import PairSummary
from ..shared.tables import known


def headline(summary: PairSummary) -> list[tuple[str, float | None]]:
    """Each category, then the overall accuracy JudgeBench reports (every pair weighs the same)."""
    return [*summary.subsets.items(), ("accuracy", known(summary.accuracy))]
