"""M-RewardBench (Cohere-Labs-Community/m-rewardbench at 708d3bd) on data in its hub dataset's exact schema (one
config per language; tests/new_benchmarks_fixture.py), held against its rules written out here: subset accuracy,
categories weighted by its analysis/plot_utils.py counts (not RewardBench's), the language score, the average
without English and its leaderboard's Std; `data fetch` through a stand-in hub. Where $RMBENCH_MREWARDBENCH_DIR names
its checkout, its own `get_scores` scores the same run's per-subset results."""

from __future__ import annotations

import importlib
import json
import math
import os
import statistics
import sys
from pathlib import Path

import pytest
from helpers_cli import cli
from hub_standin import hub_env, serve_hub
from new_benchmarks_fixture import MRB_CATEGORIES, mrb_records, write_mrb

import rmbench_client as rmb
from rmbench_client.benchmarks.m_reward_bench import constants as mrb_c

UPSTREAM = os.environ.get("RMBENCH_MREWARDBENCH_DIR")
LANGUAGES = ("arb_Arab", "deu_Latn", "eng_Latn", "zho_Hant")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mrb")
    write_mrb(root / "data", LANGUAGES, per_subset=3)
    rmb.evaluate({"model": "baseline:longer"}, benchmark="m-reward-bench", data=root / "data", out=root / "run")
    return root / "run"


def expected_subsets(language: str) -> dict[str, float]:
    """run_rewardbench.py's per-subset accuracy of baseline:longer: the chosen answer strictly longer."""
    got: dict[str, list[bool]] = {}
    for r in mrb_records(language, per_subset=3):
        got.setdefault(r["source"], []).append(len(r["chosen"]) > len(r["rejected"]))
    return {s: sum(v) / len(v) for s, v in got.items()}


def test_languages_categories_and_the_average_as_its_analysis_computes_them(run_dir: Path) -> None:
    s = json.loads((run_dir / "summary.json").read_text())
    assert not s["complete"] and "no data for 460 group(s)" in s["partial"][0]  # 20 of its 23 languages absent
    weights = {"math-prm": 983, "hep-python": 163, "alpacaeval-easy": 79}  # its counts (RewardBench's: 984, 164, 100)
    assert all(mrb_c.WEIGHTS[k] == v for k, v in weights.items())
    scores = {}
    for lang in LANGUAGES:
        subsets = expected_subsets(lang)
        got = s["languages"][lang]
        assert got["subsets"] == subsets and sum(got["n"].values()) == 3 * 23
        for category, members in MRB_CATEGORIES.items():
            want = sum(subsets[m] * mrb_c.WEIGHTS[m] for m in members) / sum(mrb_c.WEIGHTS[m] for m in members)
            assert got["categories"][category] == pytest.approx(want, abs=1e-15)
        assert got["score"] == pytest.approx(sum(got["categories"].values()) / 4, abs=1e-15)
        scores[lang] = got["score"]
    averaged = [scores[lang] for lang in LANGUAGES if lang != "eng_Latn"]  # English is left out of the average
    assert s["average"] == pytest.approx(statistics.mean(averaged), abs=1e-15)
    assert s["std"] == pytest.approx(statistics.stdev([*averaged, s["average"]]), abs=1e-15)  # "Avg" counted too
    assert [name for name, _ in rmb.load_result(run_dir).headlines.items()][-1] == "average"


def test_data_fetch_puts_each_language_in_its_folder(tmp_path: Path) -> None:
    write_mrb(tmp_path / "hub", mrb_c.LANGUAGES, per_subset=1)
    shard = "test-00000-of-00001.parquet"
    files = {f"{lang}/{shard}": (tmp_path / "hub" / lang / shard).read_bytes() for lang in mrb_c.LANGUAGES}
    files["translation/test-00000-of-00001.parquet"] = b"not read"
    with serve_hub({mrb_c.HUB_REPO: files}) as fake:
        env = hub_env(tmp_path, fake.url)
        work = tmp_path / "work"
        work.mkdir()
        proc = cli("data", "fetch", "m-reward-bench", env=env, cwd=work)
    assert proc.returncode == 0, proc.stderr
    fetched = work / "data" / "m-reward-bench"
    assert sorted(str(p.relative_to(fetched)) for p in fetched.rglob("*.parquet")) == [
        f"{lang}/test-00000-of-00001.parquet" for lang in sorted(mrb_c.LANGUAGES)
    ]  # the translation config left out
    listing = cli("data", "list", env=env, cwd=work).stdout
    assert "m-reward-bench: data/m-reward-bench: 529 prompts in 23 file(s)" in listing  # every language/subset


@pytest.mark.skipif(not UPSTREAM, reason="set RMBENCH_MREWARDBENCH_DIR to a checkout of "
                    "Cohere-Labs-Community/m-rewardbench (708d3bd) to score with its own analysis code")  # fmt: skip
def test_its_own_get_scores_agrees(run_dir: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(UPSTREAM))
    plot_utils = importlib.import_module("analysis.plot_utils")
    s = json.loads((run_dir / "summary.json").read_text())
    for lang in LANGUAGES:
        folder = tmp_path / lang
        folder.mkdir()
        result = {
            "model": "m",
            "ref_model": None,
            "chat_template": None,
            "extra_results": s["languages"][lang]["subsets"],
        }
        (folder / "m.json").write_text(json.dumps(result))
        (theirs,) = plot_utils.get_scores(folder)
        assert theirs["category_scores"] == s["languages"][lang]["categories"]
        assert theirs["score"] == s["languages"][lang]["score"]
    assert not math.isnan(s["average"])
