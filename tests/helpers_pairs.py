"""Made-up preference pairs for tests that need a small data set of their own."""

from __future__ import annotations

import json
from pathlib import Path


def write_pairs(path: Path, prompts: int) -> Path:
    """Your own preference pairs (`pairwise`), `prompts` of them, one JSON line each: made up, distinct texts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [{"prompt": f"Question {i}?", "chosen": f"A careful answer {i * 7}.", "rejected": f"No {i}."}
               for i in range(prompts)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path
