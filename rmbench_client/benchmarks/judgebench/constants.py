"""CONSTANTS"""

from __future__ import annotations

HUB_REPO = "ScalerLab/JudgeBench"
SPLITS = ("gpt", "claude")  # responses by GPT-4o (350 pairs) and by Claude 3.5 Sonnet (270)
CATEGORIES = ("knowledge", "reasoning", "math", "coding")
