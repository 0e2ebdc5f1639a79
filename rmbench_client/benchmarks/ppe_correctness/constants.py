"""CONSTANTS"""

from __future__ import annotations

HUB_REPOS = {  # set -> hub dataset (split `train`)
    "mmlu_pro": "lmarena-ai/PPE-MMLU-Pro-Best-of-K",
    "math": "lmarena-ai/PPE-MATH-Best-of-K",
    "gpqa": "lmarena-ai/PPE-GPQA-Best-of-K",
    "ifeval": "lmarena-ai/PPE-IFEval-Best-of-K",
    "mbpp_plus": "lmarena-ai/PPE-MBPP-Plus-Best-of-K",
}
HUB_SPLIT = "train"
SETS = tuple(HUB_REPOS)
# a field only that set's records hold: how a record tells its set
SET_KEYS = {"mmlu_pro": "answer_index", "math": "level", "gpqa": "correct_choice_index",
                "ifeval": "instruction_id_list", "mbpp_plus": "test_list"}  # fmt: skip
BEST_OF_K_SHOWN = (1, 2, 4, 8, 16, 32)  # the curve's points in the table (the summary holds every K)
