"""CONSTANTS"""

from __future__ import annotations

HUB_REPO = "lmarena-ai/PPE-Human-Preference-V1"
HUB_SPLIT = "test"
# the prompt flags PPE reports accuracy on (hub booleans; PPE's `is_code` is its coding category)
FLAGS = ("hard_prompt", "easy_prompt", "if_prompt", "is_code", "math_prompt")
LANGUAGES = {"English": "english", "Chinese": "chinese", "Russian": "russian"}  # `language` -> bucket
OTHER_LANGUAGE = "other"
# PPE's two categories of a battle rather than its prompt, tagged by the loader from the hub's own fields:
# `shorter_won`, the winner's answer has fewer tokens (conv_metadata's sum_assistant_a_tokens / _b_tokens), and
# `similar_response`, the answers' similarity `sim` is at least SIMILAR_RESPONSE_SIM
BATTLE_TAGS = ("shorter_won", "similar_response")
SIMILAR_RESPONSE_SIM = 0.9  # the open choice: PPE's own threshold could not be read (docs/benchmarks.md)
# PPE's categories, in its order: name -> (a flag, battle tag or language bucket, and whether a battle has it)
CATEGORIES = {
    "hard_prompt": ("hard_prompt", True),
    "easy_prompt": ("easy_prompt", True),
    "if_prompt": ("if_prompt", True),
    "is_code": ("is_code", True),
    "math_prompt": ("math_prompt", True),
    "shorter_won": ("shorter_won", True),
    "similar_response": ("similar_response", True),
    "english_prompt": ("english", True),
    "non_english_prompt": ("english", False),
    "chinese_prompt": ("chinese", True),
    "russian_prompt": ("russian", True),
}
