"""CONSTANTS"""

from __future__ import annotations

NAME = "if-reward-bench"
SOURCE_REPO = "thu-coai/IF-RewardBench"
SOURCE_COMMIT = "c192fe9"
# the instruction types: the groups, and the three whose mean is the overall figure
TYPES = ("Single_Turn", "Multi_Turn", "System_Prompt")
# the response models by size, as its metrics scripts group them (`small_oss` ... `api_models`); others "Unknown"
MODEL_TYPES = {
    "Small": ("MiniCPM4.1-8B", "Qwen3-8B", "GLM-4-9B-0414", "Llama-3.1-Tulu-3.1-8B"),
    "Middle": ("GLM-4.5-Air", "LLama-3.3-70B-Instruct", "GPT-OSS-20B", "Qwen3-32B"),
    "Large": ("Qwen-3-235B-A22B-Instruct-2507", "Kimi-K2", "GLM-4.5", "DeepSeek-R1"),
    "API": ("Gemini-2.5-Pro", "Doubao-1.6-Seed", "GPT-5", "Claude-4.5-Sonnet"),
}
UNKNOWN_MODEL_TYPE = "Unknown"
MAX_TURN = 5  # turns above count as 5
FIELDS = ("id", "response_generation_model", "instruction_type", "messages", "checklist", "responses",
          "preference_graph")  # fmt: skip
# the facets (Example.facets) a line carries, from which the breakdowns are computed
FACETS = ("response_generation_model", "turn", "constraints")
