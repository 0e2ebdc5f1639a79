"""The leaderboard (results/leaderboard.py) as a page, CSV or JSON.

The page is self-contained as the report page is (html.py: inline CSS, JavaScript and data, no network), sortable
by any column in the browser (assets/leaderboard.js), each number linking to its run's report page where the run
has one, by a path relative to the page: the page and the runs' folder can be published together. CSV: the model's
name first, then one column per benchmark, each headline in percent (two decimals, as `compare --format csv`),
empty where the model has no complete run. JSON: everything the page shows, fractions in [0, 1].
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import msgspec

from ..benchmarks.shared.formatting import percent
from ..errors import DataError
from ..results.leaderboard import Board, Cell
from ..results.stamp import stamp
from .html import self_contained

FORMATS = ("html", "csv", "json")
TITLE = "Leaderboard"


def _cell(cell: Cell, page_dir: Path | None) -> dict[str, Any]:
    """A cell as JSON; `page_dir`: the page's folder, to which its link to the report page is relative."""
    out: dict[str, Any] = {
        "name": cell.name,
        "value": cell.value,
        "low": cell.low,
        "high": cell.high,
        "run_dir": str(cell.run_dir),
        "report": str(cell.report) if cell.report else None,
        "version": cell.version,
        "written": cell.written,
        "dated_by": cell.dated_by,
        "others": cell.others,
        "tie": cell.tie,
    }
    if page_dir is not None and cell.report is not None:
        out["href"] = Path(os.path.relpath(cell.report.resolve(), page_dir.resolve())).as_posix()
    return out


def board_data(board: Board, page_dir: Path | None = None) -> dict[str, Any]:
    """Everything the page shows (JSON-ready), with the stamp of what made it."""
    return {
        "title": TITLE,
        "benchmarks": [{"name": n, "title": board.titles[n], "headline": board.headlines[n]} for n in board.benchmarks],
        "rows": [
            {
                "model": m,
                "cells": {b: _cell(board.cells[m, b], page_dir) for b in board.benchmarks if (m, b) in board.cells},
            }  # fmt: skip
            for m in board.models
        ],
        "left_out": [
            {"path": str(x.path), "model": x.model, "benchmark": x.benchmark, "kind": x.kind, "why": x.why}
            for x in board.left_out
        ],  # fmt: skip
        "notes": list(board.notes),
        "stamp": msgspec.to_builtins(stamp(None)),
    }


def as_csv(board: Board) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["model", *board.benchmarks])
    for m in board.models:
        cells = [board.cells.get((m, b)) for b in board.benchmarks]
        writer.writerow([m, *(percent(c.value, digits=2) if c is not None else "" for c in cells)])
    return buf.getvalue()


def render(board: Board, fmt: str, out: Path | None) -> str:
    """The leaderboard in `fmt`; a page's links are relative to `out`'s folder (default: the current one)."""
    if fmt == "html":
        page_dir = out.parent if out is not None else Path()
        return self_contained("leaderboard.html", ("common.js", "leaderboard.js"), TITLE, board_data(board, page_dir))
    if fmt == "csv":
        return as_csv(board)
    if fmt == "json":
        return json.dumps(board_data(board), indent=2) + "\n"
    raise DataError(f"unknown format {fmt!r} ({', '.join(FORMATS)})")
