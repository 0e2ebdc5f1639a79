"""RM-Bench 3x3 style heatmaps: one PNG per domain and one overall.

Rows are the chosen response's style, columns the rejected one's; a cell is the percent of prompts whose chosen
response beats the rejected one. Lower triangle = easy, diagonal = normal, upper triangle = hard.
"""

from __future__ import annotations

import re
from pathlib import Path

from msgspec import UnsetType

from ..shared.formatting import figure
from ..shared.tables import known
from .constants import HEATMAP_DPI, HEATMAP_FILE, STYLES
from .scoring import level_values
from .summary import Domain, Overall, RMBenchSummary

_REGION_COLOURS = {"easy": "#1f77b4", "normal": "#444444", "hard": "#d62728"}


def _region(i: int, j: int) -> str:
    return "easy" if i > j else "normal" if i == j else "hard"


def _safe(name: str) -> str:
    """A domain name usable in a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "unnamed"


def _plot(matrix: list[list[float]], title: str, path: Path) -> None:
    import numpy as np
    from matplotlib.patches import Patch, Rectangle

    m = 100 * np.asarray(matrix, dtype=float)
    styles = STYLES
    fig = figure(figsize=(6.4, 5.6), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(m, cmap="RdYlGn", vmin=0, vmax=100)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="chosen beats rejected (%)")
    for i in range(3):
        for j in range(3):
            region = _region(i, j)
            # Hatching marks the hard triangle even in greyscale prints; outlines mark every region.
            ax.add_patch(
                Rectangle(
                    (j - 0.46, i - 0.46),
                    0.92,
                    0.92,
                    fill=False,
                    edgecolor=_REGION_COLOURS[region],
                    linewidth=2.5,
                    hatch="///" if region == "hard" else None,
                    alpha=0.9,
                )
            )
            value = "n/a" if np.isnan(m[i, j]) else f"{m[i, j]:.1f}%"
            box = {"boxstyle": "round,pad=0.25", "facecolor": "white", "edgecolor": "none", "alpha": 0.8}
            ax.text(j, i - 0.06, value, ha="center", va="center", fontsize=15, fontweight="bold", bbox=box)
            ax.text(j, i + 0.27, region, ha="center", va="center", fontsize=9, color=_REGION_COLOURS[region], bbox=box)
    ax.set_xticks(range(3), styles)
    ax.set_yticks(range(3), styles)
    ax.set_xlabel("rejected response style")
    ax.set_ylabel("chosen response style")
    ax.set_title(title, fontsize=11)
    legend = {"easy": "easy (lower triangle)", "normal": "normal (diagonal)", "hard": "hard (upper triangle)"}
    handles = [
        Patch(
            facecolor="none", edgecolor=_REGION_COLOURS[r], linewidth=2.5, hatch="///" if r == "hard" else None, label=t
        )
        for r, t in legend.items()
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=8, frameon=False)
    fig.savefig(path, dpi=HEATMAP_DPI, bbox_inches="tight", pad_inches=0.15)


def _title(model: str, name: str, block: Domain | Overall) -> str:
    values = zip(("easy", "normal", "hard", "avg"), level_values(block), strict=True)
    nums = "   ".join(f"{level} {100 * value:.1f}" for level, value in values if value is not None)
    n = known(block.n)
    count = "" if n is None else f"  (n={n})"
    return f"{model} — RM-Bench {name}{count}\n{nums}"


def write_heatmaps(summary: RMBenchSummary, out_dir: Path, title: str) -> list[Path]:
    """Write heatmap-<domain>.png for each domain and heatmap-overall.png; [] for a summary without domains."""
    if not summary.domains:  # no matrix to draw
        return []
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    panels: list[tuple[str, Domain | Overall, list[list[float]]]] = [
        (name, d, d.matrix) for name, d in summary.domains.items()
    ]
    if not isinstance(summary.overall.matrix, UnsetType):
        panels.append(("overall", summary.overall, summary.overall.matrix))
    written = []
    for name, block, matrix in panels:
        path = out_dir / HEATMAP_FILE.format(name=_safe(name))
        _plot(matrix, _title(title, name, block), path)
        written.append(path)
    return written
