"""CONSTANTS"""

from __future__ import annotations

SOURCE_REPO = "Zhou-Zoey/RMB-Reward-Model-Benchmark"  # on GitHub; no hub dataset of its own
SOURCE_COMMIT = "2be3180857f2190b7ffa929d43190835627f1f4d"  # the files, fields and scoring read here
PAIRWISE = "Pairwise_set"  # chosen vs reject
BON = "BoN_set"  # bon_best vs every loser in loser_list
GOALS = ("Helpfulness", "Harmlessness")
# the 49 scenarios (<goal>/<path>), each a file RMB_dataset/<set>/<scenario>.json in both sets
SCENARIOS = (
    "Harmlessness/S1",
    "Harmlessness/S10",
    "Harmlessness/S11",
    "Harmlessness/S2",
    "Harmlessness/S3",
    "Harmlessness/S4",
    "Harmlessness/S5",
    "Harmlessness/S6",
    "Harmlessness/S7",
    "Harmlessness/S8",
    "Harmlessness/S9",
    "Harmlessness/multi",
    "Helpfulness/Brainstorming/Idea Development",
    "Helpfulness/Brainstorming/Problem Solving",
    "Helpfulness/Chat/Casual Conversation",
    "Helpfulness/Chat/Discussion",
    "Helpfulness/Chat/Supportive Conversation",
    "Helpfulness/Classification/Content Categorization",
    "Helpfulness/Classification/Quality and Compliance Assessment",
    "Helpfulness/Closed QA/ContextBased",
    "Helpfulness/Closed QA/OptionBased",
    "Helpfulness/Code/Data Management",
    "Helpfulness/Code/Development and Implementation",
    "Helpfulness/Code/Documentation",
    "Helpfulness/Code/Quality and Optimization",
    "Helpfulness/Generation/Creative Writing",
    "Helpfulness/Generation/Professional Content Generation",
    "Helpfulness/Open QA/Factual",
    "Helpfulness/Open QA/General Explanation",
    "Helpfulness/Open QA/Hypothetical Scenarios",
    "Helpfulness/Open QA/Interpretative Analysis",
    "Helpfulness/Open QA/Personal Opinion and Advice",
    "Helpfulness/Open QA/Technical and Practical Support",
    "Helpfulness/Reasoning/Analytical Reasoning",
    "Helpfulness/Reasoning/Critical Thinking",
    "Helpfulness/Reasoning/Human Decision Making",
    "Helpfulness/Reasoning/Logical Deduction",
    "Helpfulness/Reasoning/Pattern Recognition",
    "Helpfulness/Rewrite/Paraphrasing",
    "Helpfulness/Rewrite/PostQuality Assessment Rewriting",
    "Helpfulness/Rewrite/Textual ExpansionReduction",
    "Helpfulness/Rewrite/Tone Adjustment",
    "Helpfulness/Role Playing/General Character",
    "Helpfulness/Role Playing/Specific Character",
    "Helpfulness/Summarization/Specialized Summaries",
    "Helpfulness/Summarization/Standard Summaries",
    "Helpfulness/Translation/GeneralExcerpt Language Translation",
    "Helpfulness/Translation/Literary and Cultural Translation",
    "Helpfulness/Translation/Technical and Scientific Translation",
)
CATEGORY_PATHS = tuple(f"{s}/{name}" for s in (PAIRWISE, BON) for name in SCENARIOS)
