"""RM-Bench's math domain through the whole pipeline. RM-Bench's math_filtered.json is not available here, so the
test builds one in its exact schema (as the other *_filtered.json files: id, prompt, subset, chosen[3],
rejected[3]; the domain comes from the file name) and runs it beside the four real domain files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers_data import RMBENCH_FILES, require_rmbench
from rich.console import Console

from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.report.printing import print_summary
from rmbench_client.run.runner import run


def answer(n: int, seed: str) -> str:
    """A math answer of exactly n characters (baseline:longer scores the length)."""
    return (f"{seed}: 2 + 2 = 4. " * n)[:n]


# baseline:longer: m1 lengths c = 10, 20, 30 vs r = 5, 15, 25 -> c[i] > r[j] = [[1,0,0],[1,1,0],[1,1,1]];
# m2 c = 5, 5, 5 vs r = 10, 10, 10 -> all 0. Mean [[.5,0,0],[.5,.5,0],[.5,.5,.5]]: easy .5, normal .5, hard 0.
MATH = [
    {
        "id": 1,
        "prompt": "What is 2 + 2?",
        "subset": "math",
        "chosen": [answer(10, "a"), answer(20, "b"), answer(30, "c")],
        "rejected": [answer(5, "d"), answer(15, "e"), answer(25, "f")],
    },
    {
        "id": 2,
        "prompt": "Solve x + 1 = 3.",
        "subset": "math",
        "chosen": [answer(5, "g"), answer(5, "h"), answer(5, "i")],
        "rejected": [answer(10, "j"), answer(10, "k"), answer(10, "l")],
    },
]
MATH_MATRIX = [[0.5, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.5, 0.5]]


@pytest.fixture
def five_domains(tmp_path) -> Path:
    """The four real RM-Bench files (linked, not copied) and the built math file: every domain present."""
    d = tmp_path / "rm-bench"
    d.mkdir()
    for name in RMBENCH_FILES:
        (d / name).symlink_to(require_rmbench() / name)
    (d / "math_filtered.json").write_text(json.dumps(MATH, indent=4), encoding="utf-8")
    return d


def test_math_file_loads_as_the_math_domain(five_domains):
    data = load_dataset("rm-bench", five_domains)
    math = [ex for ex in data.examples if ex.group == "math"]
    assert [ex.id for ex in math] == ["math/1", "math/2"] and math[0].subgroup == "math"
    assert data.missing == []  # every domain: the run is complete


@pytest.mark.slow
def test_math_through_run_scoring_and_reports(five_domains, tmp_path):
    out = tmp_path / "run"
    cfg = load_config(None, {"model": "baseline:longer", "data": str(five_domains), "out": str(out)})
    summary = run(cfg, progress=False).summary
    assert summary["missing_groups"] == [] and summary["complete"] and summary["scored"] == 798 + 2
    m = summary["domains"]["math"]
    assert m["matrix"] == MATH_MATRIX and (m["easy"], m["normal"], m["hard"]) == (0.5, 0.5, 0.0)
    assert m["n"] == 2
    others = [summary["domains"][d]["avg"] for d in ("chat", "code", "safety")]
    assert summary["overall"]["avg"] == pytest.approx((sum(others) + 1 / 3) / 4, abs=1e-12)  # math counts as a domain

    assert (out / "heatmap-math.png").read_bytes()[:4] == b"\x89PNG"
    records = json.loads((out / "rmbench-results.json").read_text(encoding="utf-8"))
    math = [r for r in records if r["domain"] == "math"]
    assert [r["id"] for r in math] == ["math/1", "math/2"]
    assert math[0]["score_chosen"] == [10.0, 20.0, 30.0] and math[0]["subset"] == "math"
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    line = next(x for x in lines if x["id"] == "math/2")
    assert (line["domain"], line["subdomain"], line["score_rejected"]) == ("math", "math", [10.0, 10.0, 10.0])

    buf = io.StringIO()
    print_summary(summary, "longer", Console(file=buf, width=120))
    row = next(line for line in buf.getvalue().splitlines() if "math" in line)
    assert "50.0" in row and "33.3" in row
