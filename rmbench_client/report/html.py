"""A self-contained HTML page (the report page, the leaderboard): the shell every page shares (assets/page.html:
its content security policy, which allows no network access at all, and where the stylesheet, the data and the
scripts go) around the page's own body, with the CSS and JavaScript of report/assets/ inline and its data as
gzip-compressed JSON in base64: it opens from a file on an offline laptop."""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).parent / "assets"
SHELL = "page.html"
CSS = "report.css"  # one stylesheet for every page


def json_safe(value: Any) -> Any:
    """The value with NaN and infinities as null (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def self_contained(body: str, scripts: Sequence[str], title: str, data: dict[str, Any]) -> str:
    """The page of `body` (an asset: what goes inside <body> before the data and scripts) with `title`, the
    stylesheet, the `scripts` (assets, in order) and `data` filled in."""
    payload = json.dumps(json_safe(data), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    encoded = base64.b64encode(gzip.compress(payload.encode("utf-8"), mtime=0)).decode("ascii")
    page = (ASSETS / SHELL).read_text(encoding="utf-8")
    parts = {
        "__BODY__": (ASSETS / body).read_text(encoding="utf-8"),
        "__TITLE__": html.escape(title),
        "__CSS__": (ASSETS / CSS).read_text(encoding="utf-8"),
        "__JS__": "\n".join((ASSETS / name).read_text(encoding="utf-8") for name in scripts),
        "__DATA__": encoded,
    }
    for key, text in parts.items():  # in this order: the body brings __TITLE__; no other part holds a later key
        page = page.replace(key, text)
    return page
