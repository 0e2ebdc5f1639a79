"""The ranking kind: several responses per prompt, each rated (higher is better), in named groups (a ranked or rated
set of your own; IF-RewardBench's preference graphs with numbers of their own). An example holds its responses in
`chosen` and its rated pairs in `pairs`: (better, worse) indices among them, one per two responses of different
ratings (equal ratings are no pair).

per prompt, scores s and its rated pairs E:
    C = #{(i, j) in E : s_i > s_j}   D = #{(i, j) in E : s_i < s_j}   a tie in scores is neither (and wrong)
accuracy  = sum C / sum |E|  over the prompts of a group, over every prompt: the ordered pairs pooled
tau_p     = Kendall's tau-b of the ratings and the scores: (C - D) / sqrt(|E| (n0 - n_s)), n0 = k(k-1)/2 pairs of
            the prompt's k responses, n_s of them tied in score (as scipy.stats.kendalltau's variant b: the pairs
            tied in rating are those outside E). A prompt whose scores are all equal has tau 0 (they order
            nothing: no agreement); a prompt without a rated pair has none and is left out of the tau means.
tau       = mean of tau_p over the prompts of a group, over every prompt
Each figure also as the groups' mean. Intervals: groups resampled independently (grouped.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType

from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.credits import finite_matrix
from ..shared.lines import floats, text_field
from ..shared.tables import rows_table
from ..spec import Row
from .grouped import Grouped, GroupedSummary

if TYPE_CHECKING:  # rich is imported where a table is drawn
    from rich.table import Table

Pairs = tuple[tuple[int, int], ...]


class RankingSummary(GroupedSummary, kw_only=True):
    """A ranking benchmark's summary: pairwise accuracy and mean tau-b per group (`groups`), over every prompt
    (`overall`) and as the groups' mean (`macro`), with their 95% intervals (`ci`); `pairs`: the rated pairs
    of each group; `unranked`: prompts without a rated pair (in no figure)."""

    pairs: dict[str, int] = msgspec.field(default_factory=dict)
    unranked: int | UnsetType = UNSET


def rated_pairs(ratings: Sequence[float]) -> Pairs:
    """(better, worse) indices of every two responses with different ratings, in index order."""
    k = len(ratings)
    return tuple((i, j) if ratings[i] > ratings[j] else (j, i)
                 for i in range(k) for j in range(i + 1, k) if ratings[i] != ratings[j])  # fmt: skip


def checked_pairs(pairs: Iterable[Any], k: int, where: str) -> Pairs:
    """Pairs of distinct response indices below k, no pair twice (in either order); a DataError naming `where`."""
    out: list[tuple[int, int]] = []
    seen: set[frozenset[int]] = set()
    for p in pairs:
        if (not isinstance(p, list | tuple) or len(p) != 2
                or any(isinstance(v, bool) or not isinstance(v, int) for v in p)):  # fmt: skip
            raise DataError(f"{where}: a rated pair must be [better, worse] response indices, found {p!r}")
        i, j = int(p[0]), int(p[1])
        if not (0 <= i < k and 0 <= j < k) or i == j or frozenset((i, j)) in seen:
            raise DataError(f"{where}: rated pair [{i}, {j}] is not two distinct responses of {k}, once")
        seen.add(frozenset((i, j)))
        out.append((i, j))
    return tuple(out)


def tau_b(concordant: int, discordant: int, rated: int, scores: np.ndarray) -> float:
    """Kendall's tau-b of a prompt's ratings and scores from its rated pairs' counts (see the module's docstring)."""
    k = len(scores)
    _, counts = np.unique(scores, return_counts=True)
    untied = k * (k - 1) // 2 - int(np.sum(counts * (counts - 1) // 2))
    if untied == 0:
        return 0.0
    return (concordant - discordant) / math.sqrt(rated * untied)


def counts(rec: PromptScores) -> tuple[int, int, int, np.ndarray]:
    """(C, D, |E|, scores) of one prompt."""
    if rec.results is not None:
        raise DataError(f"prompt {rec.id}: a ranking is scored from one score per response, not a judge's verdicts")
    scores = finite_matrix([rec.chosen], [rec.id], "scores", len(rec.chosen))[0]
    edges = np.asarray(rec.pairs or (), dtype=np.int64).reshape(-1, 2)
    if edges.size and (edges.max() >= len(scores)):
        raise DataError(f"prompt {rec.id}: a rated pair names a response the record has no score for")
    diff = scores[edges[:, 0]] - scores[edges[:, 1]]
    return int(np.sum(diff > 0)), int(np.sum(diff < 0)), len(edges), scores


def prompt_values(records: Sequence[PromptScores]) -> np.ndarray:
    """(n, 4) per prompt: concordant pairs, rated pairs, tau-b where defined (else 0), whether defined. Their group
    means give the pooled accuracy (the first over the second) and the mean tau (the third over the fourth)."""
    out = np.zeros((len(records), 4))
    for row, rec in zip(out, records, strict=True):
        c, d, e, scores = counts(rec)
        row[:] = (c, e, tau_b(c, d, e, scores), 1.0) if e else (0.0, 0.0, 0.0, 0.0)
    return out


def _figures(means: np.ndarray) -> dict[str, np.ndarray]:
    with np.errstate(divide="ignore", invalid="ignore"):  # a group without a rated pair: undefined (NaN -> None)
        return {"accuracy": means[..., 0] / means[..., 1], "tau": means[..., 2] / means[..., 3]}


def _pairs(summary: RankingSummary, records: Sequence[PromptScores]) -> None:
    """The rated pairs of each group, and the prompts without one (in no figure)."""
    groups: dict[str, int] = {}
    for rec in records:
        groups[rec.group] = groups.get(rec.group, 0) + len(rec.pairs or ())
    summary.pairs = dict(sorted(groups.items()))
    summary.unranked = sum(not rec.pairs for rec in records) or UNSET


# the kind's numbers (spec.Numbers): `score`, `headline` (the pooled accuracy leads; `headline_of("groups")` leads
# with the groups' mean), `headline_intervals`, `prompt_values`, `headline_numbers`, `scored_groups`
NUMBERS = Grouped(
    prompt_values,
    _figures,
    ("accuracy", "tau"),
    RankingSummary,
    {
        "accuracy": "no rated pair (every prompt's responses rated alike)",
        "tau": "no prompt with a rated pair (every prompt's responses rated alike)",
    },  # fmt: skip
    _pairs,
)


# --- the per-sample line ----------------------------------------------------------------------------------------


def read_pairs(rec: dict[str, Any], k: int, where: str) -> Pairs:
    """A line's rated pairs: its `pairs` ([better, worse] indices), or those of its `ratings`."""
    if rec.get("pairs") is not None:
        if not isinstance(rec["pairs"], list):
            raise DataError(f"{where}: 'pairs' must be a list of [better, worse] response indices")
        return checked_pairs(rec["pairs"], k, where)
    if rec.get("ratings") is None:
        raise DataError(f"{where}: neither 'pairs' nor 'ratings'")
    ratings = floats(rec["ratings"], where, "ratings")
    if len(ratings) != k:
        raise DataError(f"{where}: {len(ratings)} ratings for {k} scores")
    return rated_pairs(ratings)


@dataclass(frozen=True)
class Lines:
    """A benchmark of this kind's line, `{"benchmark", "id", <group field>, "scores": [...], "pairs": [[better,
    worse], ...]}`, and its reader (which also takes `ratings` instead of `pairs`)."""

    benchmark: str
    group_field: str

    def line(self, example: Example, scores: PromptScores) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "id": example.id, self.group_field: example.group,
                "scores": list(scores.chosen), "pairs": [list(p) for p in example.pairs or ()]}  # fmt: skip

    def read(self, rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
        """The scores and rated pairs of a line this benchmark wrote; None for a record of another."""
        if rec.get("benchmark") != self.benchmark:
            return None
        rid, group = text_field(rec, "id", where), text_field(rec, self.group_field, where)
        if "scores" not in rec:
            raise DataError(f"{where}: missing key 'scores'")
        scores = floats(rec["scores"], where, "scores")
        return PromptScores(rid, group, scores, (), pairs=read_pairs(rec, len(scores), where))


# --- the table ----------------------------------------------------------------------------------------------


def rows(summary: RankingSummary) -> tuple[list[str], list[Row]]:
    """Pairwise accuracy and mean tau-b: a row per group, then every prompt and the groups' mean."""
    return NUMBERS.rows(summary)


def _caption(summary: RankingSummary) -> str:
    pairs = sum(summary.pairs.values())
    unranked = f"; {summary.unranked} prompt(s) without a rated pair left out" if summary.unranked else ""
    return f"accuracy over {pairs} rated pairs (a tie is wrong); tau: Kendall's tau-b per prompt, averaged{unranked}"


table: Callable[[RankingSummary, str], Table] = rows_table(rows, "group", _caption)
