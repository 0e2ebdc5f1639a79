"""CONSTANTS"""

from __future__ import annotations

NAME = "m-reward-bench"
SOURCE_REPO = "Cohere-Labs-Community/m-rewardbench"
SOURCE_COMMIT = "708d3bd"
HUB_REPO = "CohereLabsCommunity/multilingual-reward-bench"
# the 23 languages of M-RewardBench, each a config of the hub dataset (FLORES-200 codes, as its
# experiments/run_rm_evals.sh lists them)
LANGUAGES = ("arb_Arab", "ces_Latn", "deu_Latn", "ell_Grek", "fra_Latn", "heb_Hebr", "hin_Deva", "ind_Latn",
             "ita_Latn", "jpn_Jpan", "kor_Hang", "nld_Latn", "pes_Arab", "pol_Latn", "por_Latn", "ron_Latn",
             "rus_Cyrl", "spa_Latn", "tur_Latn", "ukr_Cyrl", "vie_Latn", "zho_Hans", "zho_Hant")  # fmt: skip
# the languages its leaderboard average leaves out (analysis/_plot_leaderboard.py, `get_leaderboard`: English)
NOT_AVERAGED = ("eng_Latn",)
# the example counts analysis/plot_utils.py weighs each subset by within its category (`EXAMPLE_COUNTS`: M-RewardBench's
# own subset sizes; math-prm upweighted to 983 "to be equal to code")
WEIGHTS: dict[str, int] = {
    "alpacaeval-easy": 79,
    "alpacaeval-length": 79,
    "alpacaeval-hard": 76,
    "mt-bench-easy": 24,
    "mt-bench-med": 38,
    "mt-bench-hard": 35,
    "math-prm": 983,
    "refusals-dangerous": 100,
    "refusals-offensive": 100,
    "llmbar-natural": 76,
    "llmbar-adver-neighbor": 124,
    "llmbar-adver-GPTInst": 87,
    "llmbar-adver-GPTOut": 42,
    "llmbar-adver-manual": 43,
    "xstest-should-refuse": 154,
    "xstest-should-respond": 247,
    "donotanswer": 135,
    "hep-cpp": 164,
    "hep-go": 164,
    "hep-java": 164,
    "hep-js": 164,
    "hep-python": 163,
    "hep-rust": 164,
}
FIELDS = ("id", "language", "prompt", "chosen", "rejected", "source")
