"""RewardMATH (kimsh0507/RewardMATH_official at cde06ab), held against its rules written out here and, where its
checkout is named by $RMBENCH_REWARDMATH_DIR, against its own `RewardMATHEvaluation` run on its 31 published result
files (18 of scalar scores, 9 of pairwise verdicts, 4 of step scores under each of the 8 aggregations): every
figure equal to the last bit. Without the variable those tests are skipped and say so."""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import types
from pathlib import Path

import pytest
from helpers_cli import cli, one_error_line
from hub_standin import hub_env, serve_hub
from new_benchmarks_fixture import rewardmath_records, write_rewardmath

import rmbench_client as rmb
from rmbench_client.benchmarks.rewardmath import scoring
from rmbench_client.benchmarks.shared.step_aggregates import NAMES, aggregate, plain_sum
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores
from rmbench_client.results.score_files import summarize

UPSTREAM = os.environ.get("RMBENCH_REWARDMATH_DIR")
needs_upstream = pytest.mark.skipif(
    not UPSTREAM,
    reason="set RMBENCH_REWARDMATH_DIR to a checkout of "
    "kimsh0507/RewardMATH_official (cde06ab) to check its published result files",
)


def test_a_baseline_run_follows_rewardmaths_rules(tmp_path: Path) -> None:
    data = write_rewardmath(tmp_path / "RewardMATH_direct.json", problems=14)
    result = rmb.evaluate({"model": "baseline:longer"}, benchmark="rewardmath", data=data, out=tmp_path / "run")
    assert result.complete and result.headline_name == "accuracy"  # 14 problems: every subject twice
    records = rewardmath_records(problems=14)
    problems: dict[int, list[int]] = {}
    for r in records:  # a solution's text: its steps joined by newlines, as upstream hands it to a reward model
        problems.setdefault(r["problem_id"], []).append(len("\n".join(r["eval_solution"])))
    right = ties = 0
    rr = []
    for lengths in problems.values():
        chosen, rejected = lengths[0], lengths[1:]
        right += chosen > max(rejected)
        ties += chosen >= max(rejected)
        rr.append(1 / (1 + sum(r >= chosen for r in rejected)))
    overall = result.summary["overall"]
    assert (overall["accuracy"], overall["accuracy w/ ties"]) == (right / 14, ties / 14)
    assert overall["mrr"] == pytest.approx(math.fsum(rr) / 14, abs=1e-15)
    assert len(result.summary["groups"]) == 7 and all(n == 2 for n in result.summary["n"].values())
    # the run's lines in upstream's result layout score the same (its evaluate_results.py reads such files)
    lines = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    theirs = [
        {"problem": "p", "solution_reference": line["solution_reference"], "score": line["score"]} for line in lines
    ]
    (tmp_path / "theirs.json").write_text(json.dumps(theirs))
    assert summarize([tmp_path / "theirs.json"])["overall"] == overall


def test_data_fetch_takes_the_hubs_files(tmp_path: Path) -> None:
    """`data fetch rewardmath` downloads the hub dataset's data files (a stand-in hub on loopback: the real one's
    file names could not be read here) into data/rewardmath/, where `data list` and a run find them."""
    data = write_rewardmath(tmp_path / "RewardMATH_direct.json", problems=7).read_bytes()
    with serve_hub({"RewardMATH/RewardMATH": {"RewardMATH_direct.json": data, "README.md": b"# card"}}) as fake:
        env = hub_env(tmp_path, fake.url)
        work = tmp_path / "work"
        work.mkdir()
        proc = cli("data", "fetch", "rewardmath", env=env, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (work / "data" / "rewardmath").rglob("*.*")] == ["RewardMATH_direct.json"]
    assert "rewardmath: data/rewardmath: 7 prompts in 1 file(s)" in cli("data", "list", env=env, cwd=work).stdout


def test_ties_ranks_and_a_pairwise_judge_as_upstream_counts_them() -> None:
    assert scoring.outcome([2.0], [1.0, 2.0]) == (False, True, 0.5)  # a tie: wrong, right with ties, ranked behind
    assert scoring.outcome([3.0], [1.0, 2.0]) == (True, True, 1.0)
    # a judge: the chosen's score is 1 + its wins, a rejected one's 1 where the chosen won, else comparisons + 2
    assert scoring.judged([1.0, 0.5, 0.0]) == ([2.0], [1.0, 5.0, 5.0])
    s = scoring.score([PromptScores("1", "all", (), (), results=(1.0, 1.0)),
                       PromptScores("2", "all", (), (), results=(1.0, 0.5, 0.0))], samples=5)  # fmt: skip
    assert s.overall == {"accuracy": 0.5, "mrr": (1 + 1 / 3) / 2, "accuracy w/ ties": 0.5}


def test_step_aggregations_as_its_eval_py_computes_them() -> None:
    steps = [0.9, 0.5, 0.8]
    assert aggregate(steps, "min") == 0.5 and aggregate(steps, "max") == 0.9 and aggregate(steps, "last") == 0.8
    assert aggregate(steps, "prod") == 0.9 * 0.5 * 0.8 and aggregate(steps, "geometric_mean") == (0.9 * 0.5 * 0.8) ** (
        1 / 3
    )
    assert aggregate(steps, "mean_logit") == pytest.approx(
        1 / (1 + math.exp(-sum(math.log(p / (1 - p)) for p in steps) / 3))
    )
    assert aggregate(steps, "mean_odd") == pytest.approx(sum(p / (1 - p) for p in steps) / 3)
    # summed one after another, as upstream's Python summed floats (3.12's sum compensates: 1.0 here)
    assert plain_sum([1e16, 1.0, -1e16]) == 0.0 and aggregate([1e16, 1.0, -1e16], "mean") == 0.0
    with pytest.raises(DataError, match="no step score"):
        aggregate([], "min")


def test_a_problem_without_one_chosen_solution_names_its_record(tmp_path: Path) -> None:
    records = rewardmath_records(problems=2)
    records[12]["solution_type"] = "chosen"  # problem 1 gets two
    (tmp_path / "r.json").write_text(json.dumps(records))
    with pytest.raises(DataError, match=r"r.json: record 10 \(id 10\): problem_id 1 has 2 chosen and 8 rejected"):
        load_dataset("rewardmath", tmp_path / "r.json")


def test_step_score_files_need_an_aggregation(tmp_path: Path) -> None:
    refs = ["human_to_GPT-4", "m1", "m2"]
    (tmp_path / "steps.json").write_text(json.dumps([{"problem": "p", "solution_reference": refs,
                                                      "score": [[0.9, 0.8], [0.4, 0.99], [0.7]]}]))  # fmt: skip
    one_error_line(cli("score", str(tmp_path / "steps.json")), 2, "--prm-function", "mean_logit")
    got = json.loads(cli("score", str(tmp_path / "steps.json"), "--prm-function", "min", "--json").stdout)
    assert got["overall"] == {"accuracy": 1.0, "mrr": 1.0, "accuracy w/ ties": 1.0} and got["prm_function"] == "min"
    assert got["aggregations"]["max"]["accuracy"] == 0.0  # 0.99 beats 0.9 by its best step
    bogus = cli("score", str(tmp_path / "steps.json"), "--prm-function", "bogus")
    assert bogus.returncode == 2 and "invalid choice: 'bogus'" in bogus.stderr  # argparse's words, as for every flag


def _upstream_evaluation() -> type:
    """RewardMATHEvaluation from the checkout (its answer checker, which needs MARIO_EVAL and which this class
    never calls, stubbed)."""
    src = str(Path(UPSTREAM or "") / "src")
    sys.modules.setdefault("evaluation.latex_answer_check", types.SimpleNamespace(latex_answer_check=None))  # type: ignore[arg-type]
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module("evaluation.eval").RewardMATHEvaluation  # type: ignore[no-any-return]


@needs_upstream
def test_its_published_result_files_score_as_its_own_code_scores_them(capsys: pytest.CaptureFixture[str]) -> None:
    evaluation = _upstream_evaluation()
    files = sorted((Path(UPSTREAM or "") / "results" / "RewardMATH").glob("*_reward.json"))
    assert len(files) == 31
    kinds = {"scalar": 0, "pairwise": 0, "steps": 0}
    names = {"reward Acc": "accuracy", "reward MRR": "mrr", "reward Acc (w/ tie)": "accuracy w/ ties"}
    for path in files:
        data = json.loads(path.read_text())
        kind = (
            "pairwise"
            if "chosen_position" in data[0]
            else "steps"
            if isinstance(data[0]["score"][0], list)
            else "scalar"
        )
        kinds[kind] += 1
        funcs = list(NAMES) if kind == "steps" else ["pairwise" if kind == "pairwise" else "normal"]
        theirs = evaluation(data, funcs, None).get_results()
        for func in funcs:
            ours = summarize([path], prm_function=func if kind == "steps" else None)
            assert ours["n"] == {"all": len(data)}  # a problem repeated in the file counts each time
            for their_name, our_name in names.items():
                values = theirs[func][their_name]
                assert ours["overall"][our_name] == sum(values) / len(values), (path.name, func, their_name)
    assert kinds == {"scalar": 18, "pairwise": 9, "steps": 4}
    capsys.readouterr()  # upstream prints its figures


@needs_upstream
def test_its_sample_records_load(tmp_path: Path) -> None:
    sample = Path(UPSTREAM or "") / "dataset" / "benchmark" / "RewardMATH_direct.json"
    examples = load_dataset("rewardmath", sample).examples
    assert [(e.id, len(e.chosen), len(e.rejected)) for e in examples] == [("0", 1, 9), ("399", 1, 9)]
    assert examples[0].extra["solution_reference"][0] == "human_to_GPT-4" and len(examples[0].solutions) == 10
