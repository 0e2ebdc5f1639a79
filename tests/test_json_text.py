"""JSON written through orjson (RM-Bench's indented results file, the prompts' hashed text) is the standard
library's `json.dumps(ensure_ascii=False)` byte for byte, indented by 4 and compact: floats of every magnitude,
non-finite ones, escapes, non-ASCII, empty and nested containers, real RM-Bench records; and what orjson refuses
still comes out as the standard library's."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers_data import require_rmbench

from rmbench_client import json_text


def same_as_json(data: object) -> None:
    assert json_text.indent4(data) == json.dumps(data, indent=4, ensure_ascii=False).encode("utf-8")
    assert json_text.compact(data) == json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@pytest.fixture
def orjson_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard library unreachable from the writer: these cases must go through orjson."""
    monkeypatch.setattr(json_text, "json", None)


def test_floats_of_every_magnitude_as_python_writes_them(orjson_only: None) -> None:
    rng = np.random.default_rng(7)
    wide = (rng.standard_normal(20_000) * 10.0 ** rng.integers(-320, 300, 20_000)).tolist()
    scores = rng.standard_normal(20_000).astype(np.float32).astype(float).tolist()
    edges = [0.0, -0.0, 1.0, 1e16, 1e-5, 1e-4, 1e15, 1e21, 1e22, 5e-324, 1.7976931348623157e308, 0.1, 2.0**53]
    same_as_json([wide, scores, edges, [math.nan, math.inf, -math.inf], np.float64(0.25), [np.float64(1e-7)]])


def test_strings_containers_and_other_values(orjson_only: None) -> None:
    text = 'a\u2028b\x7f\x00\x1f"\\\n\t\r\b\f é 😀 <b>x</b> \u00a0'
    same_as_json([
        {"id": 1, "prompt": [{"role": "user", "content": text}], "chosen": [text, ""]},
        {"nested": {"a": {"b": [[], {}]}}},
        [], {}, "", None, True, False, -(2**63), 2**64 - 1, (1, "t"), [[[[1.5]]]],
    ])  # fmt: skip


def test_what_orjson_refuses_goes_through_the_standard_library() -> None:
    same_as_json([{"big": 2**70, "x": 0.5}])  # an integer past 64 bits
    same_as_json({1: "a", "b": [1e-9]})  # a key that is not a string


def test_real_rm_bench_records(orjson_only: None) -> None:
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text(encoding="utf-8"))[:40]
    rng = np.random.default_rng(3)
    for rec in records:
        rec["score_chosen"] = (rng.standard_normal(3) * 1e-3).tolist()
        rec["score_rejected"] = rng.standard_normal(3).astype(np.float32).astype(float).tolist()
    same_as_json(records)
