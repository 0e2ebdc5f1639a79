"""RewardMATH's score files: this project's per-sample line, and RewardMATH's own result files.

- samples.jsonl line: `{"benchmark": "rewardmath", "id": <problem_id>, "subject", "solution_reference": [chosen's,
  rejected's...], "score": [chosen's, rejected's...]}`; a PRM's adds `"step_scores"` (each solution's, in the same
  order); a pairwise judge's holds `"results"` (its credit of the chosen solution against each rejected one)
  instead of `score`.
- RewardMATH's result files (`results/RewardMATH/<model>_reward.json`, written by `src/inference_reward.py`): a
  JSON list of `{"problem", "solution_reference": [...], "score": [...]}` per problem, the chosen solution the one
  whose reference is human_to_GPT-4; `score` holds a number per solution, or a PRM's step scores per solution
  (aggregated by `--prm-function`), or, from a pairwise judge (`--pairwise`), its verdicts "A" / "B" beside
  `chosen_position` (a verdict equal to it is a win). Such a file names no subject: its problems are one group,
  "all", numbered by their place in the file.
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.lines import credit_value, floats, text_field
from .constants import CHOSEN_REFERENCE, NAME, RESULTS_GROUP


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    rec: dict[str, Any] = {"benchmark": NAME, "id": example.id, "subject": example.group,
                           "solution_reference": example.extra.get("solution_reference")}  # fmt: skip
    if scores.results is not None:
        return rec | {"results": list(scores.results)}
    rec["score"] = [*scores.chosen, *scores.rejected]
    if scores.response_steps is not None:
        rec["step_scores"] = [list(s) for s in scores.response_steps]
    return rec


def _ours(rec: dict[str, Any], where: str) -> PromptScores:
    rid, group = text_field(rec, "id", where), text_field(rec, "subject", where)
    if rec.get("results") is not None:
        return PromptScores(rid, group, (), (), credit_value(rec["results"], where))
    if "score" not in rec:
        raise DataError(f"{where}: neither 'score' nor 'results'")
    score = floats(rec["score"], where, "score", finite=False)  # scored as upstream scores a NaN
    if len(score) < 2:
        raise DataError(f"{where}: 'score' must hold the chosen solution's score and the rejected ones'")
    steps = _steps(rec["step_scores"], where) if rec.get("step_scores") is not None else None
    return PromptScores(rid, group, score[:1], score[1:], response_steps=steps)


def _steps(value: Any, where: str) -> tuple[tuple[float, ...], ...]:
    if not isinstance(value, list) or not all(isinstance(s, list) and s for s in value):
        raise DataError(f"{where}: step scores must be a list of non-empty lists, one per solution")
    return tuple(floats(s, where, "step scores", finite=False) for s in value)


def _upstream(rec: dict[str, Any], where: str, index: int) -> PromptScores:
    """A record of RewardMATH's own result file, its chosen solution first."""
    refs, score = rec["solution_reference"], rec["score"]
    if not isinstance(refs, list) or not isinstance(score, list) or len(refs) != len(score) or not refs:
        raise DataError(f"{where}: 'solution_reference' and 'score' must be lists of one length")
    rid = str(index)
    if "chosen_position" in rec:  # a pairwise judge: each verdict against the chosen solution's position
        position = rec["chosen_position"]
        if not isinstance(position, list) or len(position) != len(score):
            raise DataError(f"{where}: 'chosen_position' must be a list as long as 'score'")
        return PromptScores(rid, RESULTS_GROUP, (), (), tuple(float(v == p) for v, p in zip(score, position,
                                                                                           strict=True)))  # fmt: skip
    chosen = [k for k, ref in enumerate(refs) if ref == CHOSEN_REFERENCE]
    if len(chosen) != 1 or len(refs) < 2:
        raise DataError(f"{where}: expected one solution by {CHOSEN_REFERENCE} among several, found {len(chosen)}")
    order = chosen + [k for k in range(len(refs)) if k != chosen[0]]
    if all(isinstance(s, list) for s in score):
        steps = _steps(score, where)
        return PromptScores(rid, RESULTS_GROUP, (), (), response_steps=tuple(steps[k] for k in order))
    values = floats(score, where, "score", finite=False)
    return PromptScores(rid, RESULTS_GROUP, (values[order[0]],), tuple(values[k] for k in order[1:]))


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    """A RewardMATH line (it names the benchmark) or a record of its own result files, else None."""
    if rec.get("benchmark") == NAME:
        return _ours(rec, where)
    if "benchmark" not in rec and {"problem", "solution_reference", "score"} <= rec.keys():
        return _upstream(rec, where, index)
    return None
