"""RewardBench's score files: this project's per-sample line, and reward-bench's own files, read and written.

- samples.jsonl line: `{"id", "subset", "score_chosen": x, "score_rejected": y}` (a pairwise judge: `"results"`,
  its credit, instead of the scores).
- reward-bench (`scripts/run_rm.py`, `run_dpo.py`, `run_generative.py` through `save_to_hub`, which writes
  `json.dumps(indent=4, sort_keys=True)`):
  `eval-set/<model>.json`, one object: subset accuracies plus `model`, `model_type`, `chat_template`;
  `eval-set-scores/<model>.json`, one column-wise object (`Dataset.to_dict()`): `id`, `subset`, `scores_chosen`,
  `scores_rejected`, `results` per prompt (a judge: `results` only) plus `model`, `model_type`, `chat_template`.
  The prior sets go to `pref-sets/` and `pref-sets-scores/`, as reward-bench's `--pref_sets` runs write them.
  Read too: the list form of `save_to_hub` (indent=4 records one after another) and per-prompt JSON/JSONL.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..kinds.pairs import is_pair, pair_scores
from ..kinds.pairs import line as line  # RewardBench's own line: the pairs kind's
from ..shared.eval_sets import RESULTS_DIR, SCORES_DIR, json_id, model_type, write_eval_set
from ..shared.lines import floats
from ..spec import Records, RunMeta
from .constants import PRIOR_RESULTS_DIR, PRIOR_SCORES_DIR
from .data import KNOWN_SUBSETS, PRIOR_SPLITS
from .scoring import from_subsets
from .summary import RewardBenchSummary


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    """A RewardBench record (one score a side, or one credit), or None when the record is not one."""
    if "scores" in rec or "num_correct" in rec or not is_pair(rec):
        return None
    pair = pair_scores(rec, where)
    if pair is None:
        return None
    subset = rec.get("subset")
    if subset not in KNOWN_SUBSETS:
        raise DataError(f"{where}: {'unknown subset ' + repr(subset) if subset else 'no subset'}")
    return PromptScores(str(rec.get("id", index)), str(subset), pair[0], pair[1], pair[2])


def write_files(
    out_dir: Path, model: str, kind: str, summary: RewardBenchSummary, scores: Records, template: str | None
) -> list[Path]:
    """eval-set/ and eval-set-scores/ files (and pref-sets/ ones for the prior sets) under out_dir, as reward-bench
    writes them; `kind` is reward-bench's model_type (see `model_type`), `template` its chat_template field
    ("tokenizer" when the model's own template was used)."""
    out: list[Path] = []
    prior = PRIOR_SPLITS
    for core, dirs in (
        (True, (RESULTS_DIR, SCORES_DIR)),
        (False, (PRIOR_RESULTS_DIR, PRIOR_SCORES_DIR)),
    ):
        part = [s for s in scores if (s.group not in prior) == core]
        if part:
            accuracies = {name: acc for name, acc in summary.subsets.items() if (name not in prior) == core}
            out += write_eval_set(out_dir, dirs, model, kind, template, accuracies, [_record(s) for s in part])
    return out


def _record(s: PromptScores) -> dict[str, Any]:
    if s.results is not None:  # a generative judge: reward-bench keeps only the per-prompt result
        return {"id": json_id(s.id), "subset": s.group, "results": s.results[0]}
    if len(s.chosen) != 1 or len(s.rejected) != 1:
        raise DataError(f"prompt {s.id}: RewardBench needs one chosen and one rejected score")
    return {
        "id": json_id(s.id),
        "subset": s.group,
        "scores_chosen": s.chosen[0],
        "scores_rejected": s.rejected[0],
        "results": int(s.chosen[0] > s.rejected[0]),  # strict, as the accuracy: a tie is wrong
    }


def results_summary(obj: dict[str, Any], where: str) -> RewardBenchSummary | None:
    """The summary an eval-set (and pref-sets) results object gives (no intervals: it holds no prompts), or None
    when the object names no RewardBench subset."""
    acc = {k: v for k, v in obj.items() if k in KNOWN_SUBSETS}
    if not acc:
        return None
    return from_subsets({k: floats(v, where, k)[0] for k, v in acc.items()})


def write_run_files(
    out: Path, meta: RunMeta, summary: RewardBenchSummary, examples: Mapping[str, Example], scores: Records
) -> list[Path]:
    """The run's eval-set files (and pref-sets ones), as reward-bench writes them."""
    kind = model_type(meta.model_type, meta.dpo_reward)
    return write_files(out, meta.model, kind, summary, scores, meta.chat_template or "tokenizer")
