"""reward-bench's own result files, as RewardBench and RewardBench 2 write them (`save_to_hub`, which writes
`json.dumps(indent=4, sort_keys=True)`): `eval-set/<model>.json`, one object of subset accuracies plus `model`,
`model_type`, `chat_template`, and `eval-set-scores/<model>.json`, one column-wise object (`Dataset.to_dict()`)
of per-prompt rows plus the same fields."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from ...errors import DataError
from .lines import write_text

RESULTS_DIR = "eval-set"  # reward-bench style: eval-set/<model>.json, subset accuracies
SCORES_DIR = "eval-set-scores"  # reward-bench style: eval-set-scores/<model>.json, per prompt

# reward-bench's names for the kinds of model (its `model_type` field)
_MODEL_TYPES = {"reward": "Seq. Classifier", "dpo": "DPO", "dpo-ref-free": "DPO Ref. Free", "judge": "Generative"}


def model_type(kind: str, dpo_reward: str = "ratio") -> str:
    """reward-bench's `model_type` for this project's model type (and DPO reward)."""
    if kind == "dpo" and dpo_reward != "ratio":
        return _MODEL_TYPES["dpo-ref-free"]
    return _MODEL_TYPES.get(kind, kind)


def write_eval_set(
    out_dir: Path,
    dirs: tuple[str, str],
    model: str,
    kind: str,
    template: str | None,
    accuracies: Mapping[str, float],
    rows: Sequence[dict[str, Any]],
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


def json_id(rid: str) -> str | int:
    """reward-bench ids are integers: write "12" back as 12 (only when that reads back as the same string)."""
    return int(rid) if rid.isdigit() and str(int(rid)) == rid else rid


def model_path(root: Path, model: str) -> Path:
    """root/<model>.json; an org/name model id becomes a sub-directory, as reward-bench does."""
    parts = PurePosixPath(model).parts
    if not model or model.startswith("/") or any(p in ("..", ".") for p in parts) or "\\" in model:
        raise DataError(f"model name {model!r} cannot name a result file")
    path = root.joinpath(*parts[:-1], parts[-1] + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def hub_json(data: dict[str, Any] | Sequence[dict[str, Any]]) -> str:
    """reward-bench's `save_to_hub` text: an object as `json.dumps(indent=4, sort_keys=True)`, a list as those
    records one after another, each followed by a newline."""
    if isinstance(data, dict):
        return json.dumps(data, indent=4, sort_keys=True)
    return "".join(json.dumps(record, indent=4, sort_keys=True) + "\n" for record in data)


def to_columns(records: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """Records as `Dataset.to_dict()` gives them: one list per field (None where a record lacks it)."""
    keys = list(dict.fromkeys(k for r in records for k in r))
    return {k: [r.get(k) for r in records] for k in keys}
