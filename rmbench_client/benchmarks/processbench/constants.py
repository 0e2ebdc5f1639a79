"""CONSTANTS"""

from __future__ import annotations

HUB_REPO = "Qwen/ProcessBench"
SPLITS = ("gsm8k", "math", "olympiadbench", "omnimath")  # 400, 1,000, 1,000, 1,000 solutions
