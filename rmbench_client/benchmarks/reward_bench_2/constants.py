"""CONSTANTS"""

from __future__ import annotations

HUB_REPO = "allenai/reward-bench-2"
HUB_SPLIT = "test"
# RewardBench 2 subsets (the final score is their plain mean) and reward-bench's weights of the Ties score
TIES = "Ties"
SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", TIES)
TIES_WEIGHTS = {
    "tied_accuracy": 0.30,
    "ref_accuracy": 0.30,
    "correctness_preferred": 0.20,
    "correctness_preferred_hard": 0.20,
    "correctness_margin_score": 0.01,
}
