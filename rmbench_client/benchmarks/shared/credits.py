"""Turning per-prompt scores into checked float arrays: a NaN or infinite score is an error."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import DataError
from ...examples import PromptScores, comparisons


def finite_matrix(rows: Sequence[Sequence[float]], ids: Sequence[str], what: str, width: int) -> np.ndarray:
    """(n, width) float64 array; DataError naming the prompt for a wrong length or a non-finite value."""
    for rid, row in zip(ids, rows, strict=True):
        if len(row) != width:
            raise DataError(f"prompt {rid}: {what} has {len(row)} values, expected {width}")
    arr = np.asarray(rows, dtype=np.float64).reshape(len(rows), width)
    bad = ~np.isfinite(arr)
    if bad.any():
        k = int(np.argwhere(bad)[0][0])
        raise DataError(f"prompt {ids[k]}: {what} holds a non-finite score ({list(rows[k])})")
    return arr


def outcomes(records: Sequence[PromptScores], width: int) -> np.ndarray:
    """(n, width, width) credit of chosen i over rejected j: strict `>` of scores (a tie is wrong), or a
    pairwise judge's results; one kind per call."""
    ids = [r.id for r in records]
    judged = [r.results is not None for r in records]
    if any(judged):
        if not all(judged):
            raise DataError("judge results and reward scores cannot be scored together")
        flat = finite_matrix([r.results or () for r in records], ids, "results", width * width)
        if ((flat < 0) | (flat > 1)).any():
            raise DataError("judge results must be credits in [0, 1]")
        return flat.reshape(len(records), width, width)
    chosen = finite_matrix([r.chosen for r in records], ids, "score_chosen", width)
    rejected = finite_matrix([r.rejected for r in records], ids, "score_rejected", width)
    return (chosen[:, :, None] > rejected[:, None, :]).astype(np.float64)


def pair_credits(rec: PromptScores) -> np.ndarray:
    """The credit of each comparison the record scores (its `pairs`, else every chosen-rejected pair, chosen-major):
    1 when the chosen answer scores higher, 1/2 when equal, 0 when lower; or a judge's credit."""
    scored = comparisons(rec.pairs, len(rec.chosen), len(rec.rejected))
    if rec.results is not None:
        credit: np.ndarray = finite_matrix([rec.results], [rec.id], "results", len(scored))[0]
        if ((credit < 0) | (credit > 1)).any():
            raise DataError(f"prompt {rec.id}: a judge's results must be credits in [0, 1]")
        return credit
    chosen = finite_matrix([rec.chosen], [rec.id], "score_chosen", len(rec.chosen))[0]
    rejected = finite_matrix([rec.rejected], [rec.id], "score_rejected", len(rec.rejected))[0]
    if not scored:
        return np.zeros(0)
    c, r = (np.asarray(side) for side in zip(*scored, strict=True))
    if c.max() >= len(chosen) or r.max() >= len(rejected):
        raise DataError(f"prompt {rec.id}: a pair names an answer the record has no score for")
    return half_for_ties(chosen[c], rejected[r])


def half_for_ties(chosen: np.ndarray, rejected: np.ndarray) -> np.ndarray:
    """Credit of each chosen score over its rejected one: 1 higher, 1/2 equal, 0 lower (PPE's comparisons)."""
    return np.where(chosen > rejected, 1.0, np.where(chosen == rejected, 0.5, 0.0))
