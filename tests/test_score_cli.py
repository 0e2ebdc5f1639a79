"""`rmbench-client score` over every accepted score-file format, and the server-free baselines end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers_data import require_ixc, require_rmbench

from rmbench_client.cli import main
from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.run.runner import run

LEVELS = ("easy", "normal", "hard", "avg")

# The hand-worked prompts of test_scoring: chat levels easy 1/3, normal 5/9, hard 1/3, avg 11/27.
PROMPT_A = ([1, 2, 3], [0, 1.5, 2.5])
PROMPT_B = ([0, 0, 0], [0, 0, 0])
PROMPT_C = ([5, 1, 1], [1, 1, 0])
ABC_LEVELS = {"easy": 1 / 3, "normal": 5 / 9, "hard": 1 / 3, "avg": 11 / 27}
ABC_MATRIX = [[2 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 2 / 3]]
PERFECT = ([1, 1, 1], [0, 0, 0])  # every level 1
WRONG = ([0, 0, 0], [1, 1, 1])  # every level 0


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def score_json(capsys, *args: str) -> dict[str, Any]:
    """Run `score ARGS --json`; exactly one JSON object on stdout, nothing on stderr."""
    code = main(["score", *args, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    lines = out.out.splitlines()
    assert len(lines) == 1, out.out
    assert out.err == ""
    summary = json.loads(lines[0])
    assert isinstance(summary, dict)
    return summary


def assert_rmbench_schema(summary: dict[str, Any]) -> None:
    assert summary["benchmark"] == "rm-bench"
    for block in summary["domains"].values():
        assert {*LEVELS, "n", "matrix"} <= block.keys()
        assert len(block["matrix"]) == 3 and all(len(row) == 3 for row in block["matrix"])
    assert set(LEVELS) <= summary["overall"].keys()


def assert_levels(block: dict[str, Any], expected: dict[str, float], tol: float = 1e-12) -> None:
    for level, value in expected.items():
        assert block[level] == pytest.approx(value, abs=tol), level


# --- RM-Bench formats --------------------------------------------------------------------------------------------


def test_project_jsonl_rmbench(tmp_path, capsys):
    def line(rid: str, domain: str, sub: str, scores: tuple) -> dict[str, Any]:
        return {"id": rid, "domain": domain, "subdomain": sub, "score_chosen": scores[0], "score_rejected": scores[1]}

    path = write_jsonl(
        tmp_path / "samples.jsonl",
        [
            line("chat/1", "chat", "chat", PROMPT_A),
            line("chat/2", "chat", "chat", PROMPT_B),
            line("chat/3", "chat", "chat", PROMPT_C),
            line("safety-refuse/1", "safety", "safety-refuse", PERFECT),
            line("safety-response/1", "safety", "safety-response", WRONG),
        ],
    )
    s = score_json(capsys, str(path))
    assert_rmbench_schema(s)
    assert set(s["domains"]) == {"chat", "safety"}
    assert_levels(s["domains"]["chat"], ABC_LEVELS)
    for got, want in zip(s["domains"]["chat"]["matrix"], ABC_MATRIX, strict=True):
        assert got == pytest.approx(want, abs=1e-12)
    assert s["domains"]["safety"]["n"] == 2
    assert_levels(s["domains"]["safety"], {level: 0.5 for level in LEVELS})
    assert_levels(s["overall"], {level: (ABC_LEVELS[level] + 0.5) / 2 for level in LEVELS})


def test_rmbench_own_output_format(tmp_path, capsys):
    def rec(rid: int, domain: str, scores: tuple) -> dict[str, Any]:
        return {
            "id": rid,
            "domain": domain,
            "prompt": f"p{rid}",
            "chosen": ["a", "b", "c"],
            "rejected": ["x", "y", "z"],
            "score_chosen": scores[0],
            "score_rejected": scores[1],
        }

    path = write_json(
        tmp_path / "rm_bench_results.json",
        [
            rec(8, "chat", PROMPT_A),
            rec(12, "chat", PROMPT_B),
            rec(18, "chat", PROMPT_C),
            rec(30, "code", PERFECT),
            rec(2952, "safety-refuse", PERFECT),
            rec(2953, "safety-refuse", PERFECT),
            rec(3155, "safety-response", WRONG),
        ],
    )
    s = score_json(capsys, str(path))
    assert_rmbench_schema(s)
    assert {name: d["n"] for name, d in s["domains"].items()} == {"chat": 3, "code": 1, "safety": 3}
    assert_levels(s["domains"]["chat"], ABC_LEVELS)
    assert_levels(s["domains"]["safety"], {level: 2 / 3 for level in LEVELS})
    assert_levels(s["overall"], {level: (ABC_LEVELS[level] + 1 + 2 / 3) / 3 for level in LEVELS})


@pytest.mark.parametrize(("flag", "domain"), [("chat", "chat"), ("safety-refuse", "safety")])
def test_plain_list_with_domain(tmp_path, capsys, flag, domain):
    plain = [{"score_chosen": c, "score_rejected": r} for c, r in (PROMPT_A, PROMPT_B, PROMPT_C)]
    path = write_json(tmp_path / "plain.json", plain)
    s = score_json(capsys, str(path), "--domain", flag)
    assert list(s["domains"]) == [domain]
    assert s["domains"][domain]["n"] == 3
    assert_levels(s["domains"][domain], ABC_LEVELS)
    assert_levels(s["overall"], ABC_LEVELS)


def test_domain_flag_only_fills_records_without_one(tmp_path, capsys):
    recs = [
        {"id": "chat/1", "score_chosen": PROMPT_A[0], "score_rejected": PROMPT_A[1]},
        {"id": 2, "domain": "safety-response", "score_chosen": PERFECT[0], "score_rejected": PERFECT[1]},
        {"score_chosen": WRONG[0], "score_rejected": WRONG[1]},
    ]
    s = score_json(capsys, str(write_json(tmp_path / "mixed.json", recs)), "--domain", "code")
    assert {name: d["n"] for name, d in s["domains"].items()} == {"chat": 1, "safety": 1, "code": 1}
    assert s["domains"]["code"]["avg"] == 0.0 and s["domains"]["safety"]["avg"] == 1.0


def test_two_plain_lists_without_ids(tmp_path, capsys):
    a = write_json(tmp_path / "a.json", [{"score_chosen": PROMPT_A[0], "score_rejected": PROMPT_A[1]}])
    b = write_json(tmp_path / "b.json", [{"score_chosen": p[0], "score_rejected": p[1]} for p in (PROMPT_B, PROMPT_C)])
    s = score_json(capsys, str(a), str(b), "--domain", "chat")
    assert s["domains"]["chat"]["n"] == 3
    assert_levels(s["domains"]["chat"], ABC_LEVELS)


def test_ixc_reference_file_reproduces_published_numbers(capsys):
    s = score_json(capsys, str(require_ixc()), "--domain", "chat")
    assert_rmbench_schema(s)
    assert s["domains"]["chat"]["n"] == 1327
    for level, published in {"easy": 87.47, "normal": 71.34, "hard": 47.45}.items():
        assert abs(100 * s["overall"][level] - published) < 0.005, (level, s["overall"][level])


def test_several_files_pool(tmp_path, capsys):
    a = write_jsonl(
        tmp_path / "a.jsonl", [{"id": "chat/1", "score_chosen": PROMPT_A[0], "score_rejected": PROMPT_A[1]}]
    )
    b = write_jsonl(
        tmp_path / "b.jsonl",
        [{"id": f"chat/{i}", "score_chosen": p[0], "score_rejected": p[1]} for i, p in ((2, PROMPT_B), (3, PROMPT_C))],
    )
    s = score_json(capsys, str(a), str(b))
    assert s["domains"]["chat"]["n"] == 3
    assert_levels(s["domains"]["chat"], ABC_LEVELS)


# --- RewardBench formats -----------------------------------------------------------------------------------------

# (subset, official weight, correct, total); subsets left out are absent on purpose.
RB_CASE = [
    ("alpacaeval-easy", 100, 3, 4),
    ("alpacaeval-length", 95, 1, 2),
    ("alpacaeval-hard", 95, 2, 2),
    ("mt-bench-easy", 28, 0, 1),
    ("mt-bench-med", 40, 1, 4),
    ("llmbar-natural", 100, 2, 5),
    ("llmbar-adver-neighbor", 134, 1, 3),
    ("refusals-dangerous", 100, 4, 4),
    ("xstest-should-refuse", 154, 1, 2),
    ("xstest-should-respond", 250, 2, 3),
    ("donotanswer", 136, 0, 2),
    ("math-prm", 984, 3, 5),
    ("hep-cpp", 164, 1, 1),
    ("hep-rust", 164, 0, 2),
]
RB_SECTION_OF = {
    "alpacaeval-easy": "Chat",
    "alpacaeval-length": "Chat",
    "alpacaeval-hard": "Chat",
    "mt-bench-easy": "Chat",
    "mt-bench-med": "Chat",
    "llmbar-natural": "Chat Hard",
    "llmbar-adver-neighbor": "Chat Hard",
    "refusals-dangerous": "Safety",
    "xstest-should-refuse": "Safety",
    "xstest-should-respond": "Safety",
    "donotanswer": "Safety",
    "math-prm": "Reasoning",
    "hep-cpp": "Reasoning",
    "hep-rust": "Reasoning",
}


def rb_expected() -> tuple[dict[str, float], float]:
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for subset, w, correct, total in RB_CASE:
        sec = RB_SECTION_OF[subset]
        num[sec] = num.get(sec, 0.0) + w * correct / total
        den[sec] = den.get(sec, 0.0) + w
    sections = {sec: num[sec] / den[sec] for sec in num}
    return sections, sum(sections.values()) / 4


def rb_rows(make: Callable[[int, str, float, float], dict[str, Any]]) -> list[dict[str, Any]]:
    rows, rid = [], 0
    for subset, _, correct, total in RB_CASE:
        for i in range(total):
            # right: 2 > 1; wrong: a tie for the first wrong one (ties are wrong), else 1 < 2
            chosen, rejected = (2.0, 1.0) if i < correct else ((1.5, 1.5) if i == correct else (1.0, 2.0))
            rows.append(make(rid, subset, chosen, rejected))
            rid += 1
    return rows


RB_MAKERS: dict[str, Callable[[int, str, float, float], dict[str, Any]]] = {
    "project": lambda i, s, c, r: {"id": str(i), "subset": s, "score_chosen": c, "score_rejected": r},
    "reward-bench floats": lambda i, s, c, r: {"id": i, "subset": s, "scores_chosen": c, "scores_rejected": r},
    "reward-bench lists": lambda i, s, c, r: {"id": i, "subset": s, "scores_chosen": [c], "scores_rejected": [r]},
}


@pytest.mark.parametrize("fmt", list(RB_MAKERS))
@pytest.mark.parametrize("suffix", ["jsonl", "json"])
def test_rewardbench_files(tmp_path, capsys, fmt, suffix):
    rows = rb_rows(RB_MAKERS[fmt])
    path = (write_jsonl if suffix == "jsonl" else write_json)(tmp_path / f"scores.{suffix}", rows)
    s = score_json(capsys, str(path))
    assert s["benchmark"] == "reward-bench"
    assert {"subsets", "sections", "score"} <= s.keys()
    assert s["subsets"] == pytest.approx({sub: c / t for sub, _, c, t in RB_CASE}, abs=1e-12)
    sections, final = rb_expected()
    assert s["sections"] == pytest.approx(sections, abs=1e-6)
    assert s["score"] == pytest.approx(final, abs=1e-6)


# --- bad score files ---------------------------------------------------------------------------------------------


OK_RM = {"id": "chat/1", "score_chosen": [1, 2, 3], "score_rejected": [0, 1, 2]}
OK_RB = {"id": 1, "subset": "hep-go", "score_chosen": 1, "score_rejected": 0}
# kind -> (file name, records written as JSON / JSONL, or raw text; what the error line must name)
BAD_SCORE_FILES: dict[str, tuple[str, Any, str]] = {
    "nan": (
        "nan.jsonl",
        json.dumps(OK_RM) + '\n{"id": "chat/2", "score_chosen": [1, NaN, 3], "score_rejected": [0, 1, 2]}\n',
        "chat/2",
    ),
    "inf": ("inf.json", '[{"subset": "hep-go", "id": 4, "scores_chosen": Infinity, "scores_rejected": 1}]', "id 4"),
    "missing key": ("mk.jsonl", [OK_RM, {"id": "chat/2", "score_chosen": [1, 2, 3]}], "chat/2"),
    "no domain": ("plain.json", [{"score_chosen": [1, 2, 3], "score_rejected": [0, 1, 2]}], "record 0"),
    "unknown domain": ("ud.jsonl", [OK_RM | {"id": "poetry/1"}], "poetry"),
    "two scores": ("two.jsonl", [OK_RM | {"score_chosen": [1, 2]}], "chat/1"),
    "string score": ("str.jsonl", [OK_RM | {"score_rejected": ["0", 1, 2]}], "chat/1"),
    "unknown subset": ("us.jsonl", [OK_RB | {"subset": "hep-cobol"}], "hep-cobol"),
    "duplicate": ("dup.jsonl", [OK_RM, OK_RM], "chat/1"),
    "mixed": ("mix.jsonl", [OK_RM, OK_RB], "record 1"),
    "not json": ("bad.json", "[{]", "not valid JSON"),
    "absent": ("absent.jsonl", None, "not found"),
}


@pytest.mark.parametrize("kind", list(BAD_SCORE_FILES))
def test_bad_score_file_is_one_line(tmp_path, capsys, kind):
    name, content, detail = BAD_SCORE_FILES[kind]
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif content is not None:
        (write_jsonl if name.endswith(".jsonl") else write_json)(path, content)
    code = main(["score", str(path), "--json"])
    out = capsys.readouterr()
    assert code == 2
    lines = out.err.splitlines()
    assert len(lines) == 1, out.err
    assert lines[0].startswith("error:") and str(path) in lines[0] and detail in lines[0]
    assert out.out == "" and "Traceback" not in out.err


# --- baselines, end to end without servers -----------------------------------------------------------------------


def baseline_config(model: str, out: Path, seed: int = 0, limit: int | None = None):
    overrides = {"model": model, "data": str(require_rmbench()), "out": str(out), "seed": seed, "limit": limit}
    return load_config(None, overrides)


@pytest.mark.slow
def test_longer_baseline_run_then_score(tmp_path, capsys):
    data = require_rmbench()
    out = tmp_path / "longer"
    code = main(["run", "--model", "baseline:longer", "--data", str(data), "--out", str(out), "--no-progress"])
    capsys.readouterr()
    assert code == 0
    assert (out / "samples.jsonl").is_file() and (out / "summary.json").is_file()
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["scored"] == summary["prompts"] == 798 and summary["failed"] == 0
    assert summary["missing_groups"] == ["math"]
    assert len((out / "samples.jsonl").read_text(encoding="utf-8").splitlines()) == 798

    rescored = score_json(capsys, str(out / "samples.jsonl"))
    assert rescored["domains"] == summary["domains"]
    assert rescored["overall"] == summary["overall"]

    # A longer-wins judge: detailed/markdown rejected beats concise chosen, so hard is near 0 and easy high.
    assert summary["overall"]["easy"] > 0.75
    assert summary["overall"]["hard"] < 0.2


@pytest.mark.slow
def test_random_baseline_deterministic_and_near_chance(tmp_path):
    a = run(baseline_config("baseline:random", tmp_path / "a", seed=3, limit=150), progress=False).summary
    b = run(baseline_config("baseline:random", tmp_path / "b", seed=3, limit=150), progress=False).summary
    c = run(baseline_config("baseline:random", tmp_path / "c", seed=4, limit=150), progress=False).summary
    assert a["domains"] == b["domains"] and a["overall"] == b["overall"]
    assert a["domains"] != c["domains"]
    full = run(baseline_config("baseline:random", tmp_path / "full", seed=3), progress=False).summary
    assert full["scored"] == 798
    for level in LEVELS:  # about 5 standard errors of slack around 0.5
        assert abs(full["overall"][level] - 0.5) < 0.1, (level, full["overall"][level])


@pytest.mark.slow
def test_rerun_resumes_from_store(tmp_path):
    cfg = baseline_config("baseline:longer", tmp_path / "resume")
    first = run(cfg, progress=False)
    examples = load_dataset("rm-bench", require_rmbench()).examples
    distinct = {(ex.prompt, text) for ex in examples for text in ex.chosen + ex.rejected}
    assert first.sent_sequences == len(distinct)
    second = run(cfg, progress=False)
    assert second.sent_sequences == 0
    assert second.all_scored
    assert second.summary["domains"] == first.summary["domains"]
    assert second.summary["overall"] == first.summary["overall"]
    samples = (tmp_path / "resume" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(samples) == 798
    fresh = run(cfg, fresh=True, progress=False)
    assert fresh.sent_sequences == len(distinct)


def test_a_run_writes_heatmaps_unless_told_not_to(tmp_path):
    with_maps = run(baseline_config("baseline:longer", tmp_path / "maps", limit=20), progress=False)
    assert sorted(p.name for p in with_maps.out_dir.glob("heatmap-*.png"))[-1] == "heatmap-overall.png"
    without = run(baseline_config("baseline:longer", tmp_path / "none", limit=20), progress=False, heatmaps=False)
    assert not list(without.out_dir.glob("heatmap-*.png")) and (without.out_dir / "rmbench-results.json").is_file()
