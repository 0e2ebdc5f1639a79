"""IF-RewardBench's table: accuracy and tau per instruction type and overall, then its breakdowns (the responding
model's size, the turn, the checklist's length), as its metrics scripts print them."""

from __future__ import annotations

from msgspec import UnsetType

from ..shared.tables import cell_of, rows_table
from ..spec import Row
from .scoring import NAMES
from .summary import IfRewardBenchSummary

BREAKDOWNS = (("model_types", "responses by"), ("turns", "turn"), ("constraint_counts", "constraints"))


def rows(summary: IfRewardBenchSummary) -> tuple[list[str], list[Row]]:
    """A row per instruction type, the overall figures, then a row per group of each breakdown."""
    ci = None if isinstance(summary.ci, UnsetType) else summary.ci
    out: list[Row] = []
    for kind, figs in summary.instruction_types.items():
        intervals = ci.instruction_types.get(kind, {}) if ci else {}
        out.append({"name": kind, "values": [cell_of(figs[f], intervals.get(f)) for f in NAMES],
                    "n": summary.n.get(kind), "total": False})  # fmt: skip
    if not isinstance(summary.overall, UnsetType):
        intervals = ci.overall if ci else {}
        out.append({"name": "overall (types' mean)", "n": sum(summary.n.values()), "total": True,
                    "values": [cell_of(summary.overall[f], intervals.get(f)) for f in NAMES]})  # fmt: skip
    for field, label in BREAKDOWNS:
        for key, figs in getattr(summary, field).items():
            out.append({"name": f"{label} {key}", "values": [[figs[f]] for f in NAMES], "n": None, "total": True})
    return list(NAMES), out


def _caption(summary: IfRewardBenchSummary) -> str:
    return ("accuracy: the preference graph's edges the scores order right (a tie is wrong); tau: its Kendall "
            "tau-b; both per instruction, averaged (x100)")  # fmt: skip


table = rows_table(rows, "instruction type", _caption)
