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

from pathlib import Path
from typing import Any

from .. import constants as C
from ..datasets.rewardbench import KNOWN_SUBSETS, PRIOR_SPLITS
from ..errors import DataError
from ..examples import Example, PromptScores
from ..scoring.rewardbench import from_subsets
from ..scoring.types import Records
from .common import credit_value, floats, hub_json, json_id, model_path, to_columns, write_text

# reward-bench's names for the kinds of model (its `model_type` field)
_MODEL_TYPES = {"reward": "Seq. Classifier", "dpo": "DPO", "dpo-ref-free": "DPO Ref. Free", "judge": "Generative"}
SCORE_KEYS = (("scores_chosen", "scores_rejected"), ("score_chosen", "score_rejected"))


def model_type(kind: str, dpo_reward: str = "ratio") -> str:
    """reward-bench's `model_type` for this project's model type (and DPO reward)."""
    if kind == "dpo" and dpo_reward != "ratio":
        return _MODEL_TYPES["dpo-ref-free"]
    return _MODEL_TYPES.get(kind, kind)


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    """A one-pair prompt's line: one score a side, or the judge's credit."""
    rec: dict[str, Any] = {"id": example.id, "subset": example.group}
    if scores.results is not None:
        rec["results"] = scores.results[0]
    else:
        rec |= {"score_chosen": scores.chosen[0], "score_rejected": scores.rejected[0]}
    return rec


def pair_scores(rec: dict[str, Any], where: str) -> tuple[tuple[float, ...], tuple[float, ...], tuple | None] | None:
    """(chosen, rejected, results) of a one-pair record (either spelling of the score keys), None if none."""
    for keys in SCORE_KEYS:
        if keys[0] in rec or keys[1] in rec:
            missing = [k for k in keys if k not in rec]
            if missing:
                raise DataError(f"{where}: missing key '{missing[0]}'")
            chosen, rejected = (floats(rec[k], where, k) for k in keys)
            if len(chosen) != 1 or len(rejected) != 1:
                raise DataError(f"{where}: expected one chosen and one rejected score")
            return chosen, rejected, None
    if rec.get("results") is not None:
        results = credit_value(rec["results"], where)
        if len(results) != 1:
            raise DataError(f"{where}: 'results' must be one credit")
        return (), (), results
    return None


def _is_pair(rec: dict[str, Any]) -> bool:
    for keys in SCORE_KEYS:
        for k in keys:
            if k in rec:
                v = rec[k]
                return not isinstance(v, list) or len(v) == 1
    v = rec.get("results")
    return v is not None and (not isinstance(v, list) or (len(v) == 1 and not isinstance(v[0], list)))


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    """A RewardBench record (one score a side, or one credit), or None when the record is not one."""
    if "scores" in rec or "num_correct" in rec or not _is_pair(rec):
        return None
    pair = pair_scores(rec, where)
    if pair is None:
        return None
    subset = rec.get("subset")
    if subset not in KNOWN_SUBSETS:
        raise DataError(f"{where}: {'unknown subset ' + repr(subset) if subset else 'no subset'}")
    return PromptScores(str(rec.get("id", index)), str(subset), pair[0], pair[1], pair[2])


def write_eval_set(
    out_dir: Path, dirs: tuple[str, str], model: str, kind: str, template: str | None, accuracies: dict, rows: list
) -> list[Path]:
    """A results file (`accuracies` by subset) and a scores file (`rows` as columns) in `dirs` under out_dir, as
    reward-bench writes them; its generative scripts write no chat_template into the scores file."""
    meta: dict[str, Any] = {"model": model, "model_type": kind}
    if not kind.startswith("Generative"):
        meta["chat_template"] = template
    grouped = {"model": model, "model_type": kind, "chat_template": template, **accuracies}
    return [
        write_text(model_path(out_dir / dirs[0], model), hub_json(grouped)),
        write_text(model_path(out_dir / dirs[1], model), hub_json(to_columns(rows) | meta)),
    ]


def write_files(
    out_dir: Path, model: str, kind: str, summary: dict, scores: Records, template: str | None
) -> list[Path]:
    """eval-set/ and eval-set-scores/ files (and pref-sets/ ones for the prior sets) under out_dir, as reward-bench
    writes them; `kind` is reward-bench's model_type (see `model_type`), `template` its chat_template field
    ("tokenizer" when the model's own template was used)."""
    out: list[Path] = []
    prior = PRIOR_SPLITS
    for core, dirs in (
        (True, (C.REWARDBENCH_RESULTS_DIR, C.REWARDBENCH_SCORES_DIR)),
        (False, (C.REWARDBENCH_PRIOR_RESULTS_DIR, C.REWARDBENCH_PRIOR_SCORES_DIR)),
    ):
        part = [s for s in scores if (s.group not in prior) == core]
        if part:
            accuracies = {name: acc for name, acc in summary["subsets"].items() if (name not in prior) == core}
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


def results_summary(obj: dict[str, Any], where: str) -> dict | None:
    """The summary an eval-set (and pref-sets) results object gives (no intervals: it holds no prompts), or None
    when the object names no RewardBench subset."""
    acc = {k: v for k, v in obj.items() if k in KNOWN_SUBSETS}
    if not acc:
        return None
    return from_subsets({k: floats(v, where, k)[0] for k, v in acc.items()})
