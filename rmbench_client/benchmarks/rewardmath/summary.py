"""RewardMATH's summary: the best-of-N kind's figures per subject and overall, with the accuracy with ties beside them
(upstream's "reward Acc (w/ tie)"); for step scores, the aggregation used and every aggregation's figures."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from ..kinds.grouped import GroupedSummary


class RewardMathSummary(GroupedSummary, kw_only=True):
    """`groups` (the subjects), `overall` (as upstream computes it: "reward Acc", "reward MRR", "reward Acc (w/
    tie)" as fractions) and `macro` hold accuracy, mrr and accuracy w/ ties; `prm_function`: how a PRM's step
    scores became one per solution; `aggregations`: the overall figures of every aggregation (step scores only)."""

    prm_function: str | UnsetType = UNSET
    aggregations: dict[str, dict[str, float]] | UnsetType = UNSET
