"""RMB's per-sample line, in the fields of the repository's own result file (`eval/result/<model>_result.json`,
written by `eval/scripts/my_run_rm.py`: `pair_uid`, `category_path`, `chosen_reward`, `reject_reward`,
`is_correct`), plus `"benchmark": "rmb"`:

- a pair:        {"benchmark", "pair_uid", "category_path", "chosen_reward", "reject_reward", "is_correct"}
- a best-of-N:   {"benchmark", "bon_uid", "category_path", "bon_best_reward", "loser_rewards": [...], "is_correct"}
- a judge: `"results"` (its credit per pair, bon_best against each loser) instead of the rewards.

Upstream's own result file (no `benchmark` key) is read too, also from its "Custom Classifier" models (pairwise
classifiers such as PairRM): they score the pair as a whole, so my_run_rm.py writes `chosen_reward` and
`reject_reward` as null and only `is_correct` (1 or 0), which is then the record's credit.
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.lines import credit_value, floats
from .scoring import credit

NAME = "rmb"


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    kind, _, uid = example.id.partition(":")
    rec: dict[str, Any] = {"benchmark": NAME, f"{kind}_uid": uid, "category_path": example.group}
    if scores.results is not None:
        rec["results"] = list(scores.results)
    elif kind == "pair":
        rec |= {"chosen_reward": scores.chosen[0], "reject_reward": scores.rejected[0]}
    else:
        rec |= {"bon_best_reward": scores.chosen[0], "loser_rewards": list(scores.rejected)}
    rec["is_correct"] = credit(scores)
    return rec


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    """An RMB record (it names the benchmark, or is upstream's `pair_uid` + `chosen_reward` line), else None."""
    if rec.get("benchmark") != NAME and not {"pair_uid", "chosen_reward"} <= rec.keys():
        return None
    group = rec.get("category_path")
    if not isinstance(group, str) or not group:
        raise DataError(f"{where}: 'category_path' must be a non-empty string")
    if "pair_uid" in rec:
        rid, keys = f"pair:{rec['pair_uid']}", ("chosen_reward", "reject_reward")
    elif "bon_uid" in rec:
        rid, keys = f"bon:{rec['bon_uid']}", ("bon_best_reward", "loser_rewards")
    else:
        raise DataError(f"{where}: neither 'pair_uid' nor 'bon_uid'")
    if rec.get("results") is not None:
        return PromptScores(rid, group, (), (), credit_value(rec["results"], where))
    if all(rec.get(k) is None for k in keys) and rec.get("is_correct") is not None:  # a custom classifier's line
        correct = rec["is_correct"]
        if correct not in (0, 1):  # 0, 1, False, True (and 0.0, 1.0)
            raise DataError(f"{where}: 'is_correct' must be 1 or 0, found {correct!r}")
        return PromptScores(rid, group, (), (), (float(correct),))
    if any(rec.get(k) is None for k in keys):
        raise DataError(f"{where}: no '{keys[0]}' / '{keys[1]}' (nor only 'is_correct') and no 'results'")
    best = floats(rec[keys[0]], where, keys[0], finite=False)  # NaN is scored as upstream scores it: wrong
    return PromptScores(rid, group, best, floats(rec[keys[1]], where, keys[1], finite=False))
