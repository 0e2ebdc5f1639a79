"""M-RewardBench's table: per language its four categories and its score; the average over languages beneath."""

from __future__ import annotations

from msgspec import UnsetType

from ..shared.rewardbench_sections import SECTIONS
from ..shared.tables import cell_of, rows_table
from ..spec import Row
from .constants import NOT_AVERAGED
from .summary import MRewardBenchSummary

COLUMNS = [*SECTIONS, "score"]


def rows(summary: MRewardBenchSummary) -> tuple[list[str], list[Row]]:
    """A row per language (its categories and score), then the average over languages."""
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    out: list[Row] = []
    for lang, scores in summary.languages.items():
        interval = ci.languages.get(lang) if ci else None
        values = [cell_of(scores.categories.get(c), None) for c in SECTIONS] + [cell_of(scores.score, interval)]
        out.append({"name": lang, "values": values, "n": sum(scores.n.values()), "total": False})
    if not isinstance(summary.average, UnsetType):
        interval = ci.average if ci and not isinstance(ci.average, UnsetType) else None
        cells: list[list[float] | None] = [None] * len(SECTIONS)
        row: Row = {"name": "average", "values": [*cells, cell_of(summary.average, interval)],
                    "n": None, "total": True}  # fmt: skip
        if summary.average is None and not isinstance(summary.undefined, UnsetType):
            row["why"] = {"score": summary.undefined.get("average", "")}
        out.append(row)
    return COLUMNS, out


def _caption(summary: MRewardBenchSummary) -> str:
    spread = summary.std if isinstance(summary.std, float) else None
    std = "" if spread is None else f"; their standard deviation {100 * spread:.1f}"
    return f"score: the categories' mean; average: the languages' mean, {', '.join(NOT_AVERAGED)} left out{std}"


table = rows_table(rows, "language", _caption)
