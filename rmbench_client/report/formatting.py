"""How every report writes a number: a fraction in [0, 1] as a percent, with half its 95% interval when known;
and the matplotlib figures' one setup (files only, no display)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def percent(value: float | None, ci: Sequence[float] | None = None, digits: int = 1) -> str:
    """'87.5', or '87.5 ±1.2' with an interval; '' for a value a run lacks."""
    if value is None:
        return ""
    text = f"{100 * value:.{digits}f}"
    if ci is not None:
        text += f" ±{100 * (ci[1] - ci[0]) / 2:.{digits}f}"
    return text


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend (imported on first use: it costs about a second)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
