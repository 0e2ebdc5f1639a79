"""CONSTANTS"""

from __future__ import annotations

NAME = "rewardmath"
SOURCE_REPO = "kimsh0507/RewardMATH_official"
SOURCE_COMMIT = "cde06ab"
HUB_REPO = "RewardMATH/RewardMATH"
# the solution_reference of the chosen (correct) solution: upstream's evaluation knows the chosen one by it alone
CHOSEN_REFERENCE = "human_to_GPT-4"
SUBJECTS = (
    "Algebra",
    "Counting & Probability",
    "Geometry",
    "Intermediate Algebra",
    "Number Theory",
    "Prealgebra",
    "Precalculus",
)  # fmt: skip  (the MATH subjects: the groups)
# the group of a record of RewardMATH's own result files, which name no subject (its figures are overall only)
RESULTS_GROUP = "all"
FIELDS = ("problem", "eval_solution", "solution_reference", "solution_type", "subject", "level", "problem_id")
