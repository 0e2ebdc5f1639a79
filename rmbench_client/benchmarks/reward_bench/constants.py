"""CONSTANTS"""

from __future__ import annotations

# its sections and their weights, shared with M-RewardBench (shared/rewardbench_sections.py)
from ..shared.rewardbench_sections import SECTIONS as SECTIONS
from ..shared.rewardbench_sections import WEIGHTS as WEIGHTS

HUB_REPO = "allenai/reward-bench"
HUB_SPLIT = "filtered"
PRIOR_HUB_REPO = "allenai/pref-test-sets"

PRIOR_SUBSETS = ("anthropic_helpful", "anthropic_hhh", "shp", "summarize")
# the other splits of allenai/pref-test-sets: read and reported per subset, never part of a section or the score
PRIOR_OTHER_SPLITS = (
    "anthropic_harmless",
    "mtbench_human",
    "mtbench_gpt4",
    "summarize_prompted",
    "pku_better",
    "pku_safer",
)
PRIOR_SECTION = "Prior Sets"
PRIOR_WEIGHT = 0.5  # the 4 core sections weigh 1 each
PRIOR_RESULTS_DIR = "pref-sets"  # the prior sets' files, as reward-bench's --pref_sets runs write them
PRIOR_SCORES_DIR = "pref-sets-scores"
