"""RewardBench 2's score files: this project's per-sample line, and reward-bench's own v2 files, read and written.

- samples.jsonl line, reward-bench's v2 per-prompt layout: `{"id", "subset", "scores": [correct answers first,
  then incorrect], "num_correct"}` (a judge naming one winner: `"results"`, its credit, instead of `scores`).
- reward-bench (`scripts/run_v2.py`, `run_generative_v2.py` through `save_to_hub`):
  `eval-set/<model>.json`: subset scores (Ties: its overall score) plus `model`, `model_type`, `chat_template`;
  `eval-set-scores/<model>.json`: one column-wise object (`Dataset.to_dict()`, indent=4, sorted keys): `id`,
  `subset`, `scores`, `results` (the 1/k credit; `run_v2.py` leaves it on Ties rows too), `num_correct`, plus
  `model`, `model_type`, `chat_template`. Its generative script writes non-Ties rows without `scores` (the
  credit is in `results`) and Ties rows with the ratings as `scores`: both are read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.eval_sets import RESULTS_DIR, SCORES_DIR, write_eval_set
from ..shared.eval_sets import model_type as v1_model_type
from ..shared.lines import credit_value, floats
from ..spec import Records, RunMeta
from .constants import SUBSETS, TIES
from .scoring import credit, from_subsets
from .summary import RewardBench2Summary


def model_type(kind: str, dpo_reward: str = "ratio") -> str:
    """reward-bench's v2 `model_type` for this project's model type (its generative scripts say "Generative RM")."""
    return "Generative RM" if kind == "judge" else v1_model_type(kind, dpo_reward)


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    """A prompt's line: every answer's score, correct answers first."""
    rec: dict[str, Any] = {"id": example.id, "subset": example.group}
    if scores.results is not None:
        rec["results"] = scores.results[0]
    else:
        rec["scores"] = [*scores.chosen, *scores.rejected]
    rec["num_correct"] = len(example.chosen)
    return rec


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    """A RewardBench 2 record (`scores` and `num_correct`), or None when the record is not one."""
    if "num_correct" not in rec and "scores" not in rec:
        return None
    subset = rec.get("subset")
    if subset not in SUBSETS:
        raise DataError(f"{where}: {'unknown subset ' + repr(subset) if subset else 'no subset'} (RewardBench 2)")
    n = rec.get("num_correct")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise DataError(f"{where}: 'num_correct' must be a positive integer")
    rid = str(rec.get("id", index))
    if rec.get("scores") is not None:
        scores = floats(rec["scores"], where, "scores", finite=False)  # NaN is scored as reward-bench scores it
        if len(scores) <= n:
            raise DataError(f"{where}: 'scores' holds {len(scores)} values for {n} correct answers")
        return PromptScores(rid, subset, scores[:n], scores[n:])
    if rec.get("results") is None:
        raise DataError(f"{where}: neither 'scores' nor 'results'")
    results = credit_value(rec["results"], where)
    if len(results) != 1:
        raise DataError(f"{where}: 'results' must be one credit")
    return PromptScores(rid, subset, (), (), results)


def write_files(
    out_dir: Path, model: str, kind: str, summary: RewardBench2Summary, scores: Records, template: str | None
) -> list[Path]:
    """eval-set/<model>.json and eval-set-scores/<model>.json under out_dir, as reward-bench's v2 scripts write
    them; `kind` is reward-bench's model_type."""
    judge = kind.startswith("Generative")
    rows = []
    for s in scores:
        row: dict[str, Any] = {"id": s.id, "subset": s.group, "num_correct": len(s.chosen)}
        if s.results is not None:
            row |= {"scores": None, "results": s.results[0]}
        else:
            both = [*s.chosen, *s.rejected]
            # run_v2.py keeps the 1/k credit on Ties rows; the generative script sets them to None
            tie_row = judge and s.group == TIES
            row |= {"scores": both, "results": None if tie_row else credit(both)}
        rows.append(row)
    dirs = (RESULTS_DIR, SCORES_DIR)
    subsets = {k: math.nan if v is None else v for k, v in summary.subsets.items()}  # upstream's NaN: undefined
    return write_eval_set(out_dir, dirs, model, kind, template, subsets, rows)


def results_summary(obj: dict[str, Any], where: str) -> RewardBench2Summary | None:
    """The summary an eval-set results object of RewardBench 2 gives (no intervals), or None when the object
    names no RewardBench 2 subset."""
    values = {k: v for k, v in obj.items() if k in SUBSETS}
    if not values:
        return None
    return from_subsets({k: floats(v, where, k, finite=False)[0] for k, v in values.items()})


def write_run_files(
    out: Path, meta: RunMeta, summary: RewardBench2Summary, examples: Mapping[str, Example], scores: Records
) -> list[Path]:
    """The run's eval-set files, as reward-bench's v2 scripts write them."""
    kind = model_type(meta.model_type, meta.dpo_reward)
    return write_files(out, meta.model, kind, summary, scores, meta.chat_template or "tokenizer")
