"""ProcessBench (`benchmark: processbench`): scoring by hand (ties at the threshold, cut scores, both kinds per
split, the average of the four F1s), the hub's files (JSON, and the same records as parquet), server-free runs that
re-score through `score`, compare's significance, a suite cell, and the error lines for bad input."""

from __future__ import annotations

import json

import msgspec
import pytest
from helpers_cli import cli, one_error_line, rescored, summary
from hub_standin import hub_env, serve_hub
from processbench_fixture import record, write_processbench

from rmbench_client.analysis import saved_runs
from rmbench_client.benchmarks import registry
from rmbench_client.benchmarks.processbench import constants as pb_c
from rmbench_client.benchmarks.processbench import scoring as pb
from rmbench_client.benchmarks.processbench.data import labels_of
from rmbench_client.benchmarks.processbench.summary import ProcessBenchSummary, Undecided
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores
from rmbench_client.results import comparison
from rmbench_client.results import typed as results
from rmbench_client.results.summary import read_summary
from rmbench_client.results.typed import Estimate


def sol(rid: str, label: int, steps: int, *scores: float) -> PromptScores:
    return PromptScores(rid, rid.rpartition("-")[0], (), (), steps=scores, step_labels=labels_of(label, steps))


def test_predictions_by_hand_ties_and_cut_scores():
    recs = [
        sol("gsm8k-0", 1, 3, 0.9, 0.2, 0.1),  # first below at 1 == label: match
        sol("gsm8k-1", 2, 3, 0.5, 0.2, 0.1),  # 0.5 is not below 0.5: first below at 1, label 2: miss
        sol("gsm8k-2", -1, 3, 0.6, 0.5, 0.7),  # none below (a tie passes): -1, match
        sol("gsm8k-3", -1, 3, 0.6, 0.49, 0.7),  # below at 1: miss
        sol("gsm8k-4", -1, 3, 0.6, 0.7),  # cut before the last step, none below: undecided, a miss
        sol("gsm8k-5", 2, 4, 0.9, 0.9),  # cut before the labelled wrong step: undecided, a miss
        sol("gsm8k-6", 2, 4, 0.9, 0.1),  # cut, but a step below: predicted 1, a miss
        sol("math-0", 0, 2, 0.1, 0.9),  # match
        sol("math-1", -1, 2, 0.1, 0.9),  # miss
    ]
    label, predicted = pb.predictions(recs)
    assert label.tolist() == [1, 2, -1, -1, -1, 2, 2, 0, -1]
    assert predicted.tolist() == [1, 1, -1, 1, -2, -2, 1, 0, 0]
    s = pb.score(recs, samples=200)
    # gsm8k: erroneous 0, 1, 5, 6 -> 1 of 4 matched; correct 2, 3, 4 -> 1 of 3
    acc_e, acc_c = 1 / 4, 1 / 3
    assert s.details["gsm8k"].error_acc == pytest.approx(acc_e)
    assert s.details["gsm8k"].correct_acc == pytest.approx(acc_c)
    assert s.splits["gsm8k"] == pytest.approx(2 * acc_e * acc_c / (acc_e + acc_c))
    assert s.splits["math"] == 0.0  # error acc 1, correct acc 0: F1 0
    assert s.average_f1 == pytest.approx((s.splits["gsm8k"] + 0.0) / 2)
    assert isinstance(s.undecided, Undecided) and s.undecided.solutions == 2
    assert s.n == {"gsm8k": 7, "math": 2}
    lo, hi = s.ci.splits["gsm8k"]
    assert lo <= s.splits["gsm8k"] <= hi
    # a higher threshold moves the ties: gsm8k-1's 0.5 is now below (predicted 0, still a miss), gsm8k-2 misses
    assert pb.predictions(recs, threshold=0.55)[1].tolist()[:3] == [1, 0, 1]


def test_a_split_without_correct_solutions_has_no_f1_and_the_average_counts_the_others():
    recs = [sol("omnimath-0", 0, 2, 0.1, 0.9), sol("olympiadbench-0", -1, 2, 0.9, 0.9),
            sol("olympiadbench-1", 1, 2, 0.9, 0.1)]  # fmt: skip
    s = pb.score(recs, samples=50)
    assert s.splits == {"olympiadbench": 1.0, "omnimath": None}
    assert s.average_f1 is None  # one split's F1 undefined: so is their mean
    assert dict(pb.headline(s))["gsm8k"] is None


def test_the_summary_round_trips_through_json():
    """summary.json's object back to the typed summary and out again, key for key and in order (an undefined F1
    and its [None, None] interval too, with its reason); a summary written without its optional `undecided` and
    `undefined` reads back with them unset, and the run's own fields are ignored."""
    bench = registry.get("processbench")
    recs = [sol("gsm8k-0", 1, 3, 0.9, 0.2, 0.1), sol("gsm8k-1", -1, 3, 0.6, 0.7), sol("gsm8k-2", -1, 2, 0.9, 0.9),
            sol("omnimath-0", 0, 2, 0.1, 0.9)]  # fmt: skip
    raw = bench.summary_json(pb.score(recs, samples=50))
    assert raw["splits"]["omnimath"] is None and raw["ci"]["splits"]["omnimath"] == [None, None]
    assert raw["details"]["omnimath"] == {"error_acc": 1.0, "correct_acc": None, "erroneous": 1, "correct": 0}
    assert list(raw)[-3:] == ["ci", "undecided", "undefined"] and raw["undecided"]["solutions"] == 1
    back = bench.read_summary(json.loads(json.dumps(raw | {"seed": 0, "complete": True})))
    assert isinstance(back, ProcessBenchSummary) and isinstance(back.undecided, Undecided)
    assert json.dumps(bench.summary_json(back), indent=2) == json.dumps(raw, indent=2)
    assert "omnimath" not in bench.headline_intervals(back) and "average_f1" not in bench.headline_intervals(back)
    undefined = results.scores_of(read_summary(raw, "summary.json")).headline
    assert undefined == Estimate(None, reason=raw["undefined"]["average_f1"])  # no value, no interval: a reason
    old = {k: v for k, v in raw.items() if k not in ("undecided", "undefined")}
    read = bench.read_summary(json.loads(json.dumps(old)))
    assert read.undecided is msgspec.UNSET and read.undefined is msgspec.UNSET
    assert json.dumps(bench.summary_json(read)) == json.dumps(old)
    assert bench.table(read, "t").caption == "threshold 0.5"
    assert bench.table(back, "t").caption == "threshold 0.5; 1 solution(s) undecided (cut), counted as misses"


def test_more_scores_than_steps_is_an_error():
    with pytest.raises(DataError, match="gsm8k-0: 3 step scores for 2 steps"):
        pb.score([sol("gsm8k-0", -1, 2, 0.9, 0.9, 0.9)])


@pytest.mark.parametrize("parquet", [False, True])
def test_hub_files_load(tmp_path, parquet):
    data = load_dataset("processbench", write_processbench(tmp_path / "pb", count=6, parquet=parquet))
    assert len(data.examples) == 24 and data.missing == []
    ex = {e.id: e for e in data.examples}["math-4"]  # 6 steps, wrong at step 4
    assert ex.group == "math" and len(ex.steps) == 6 and ex.step_labels == (1, 1, 1, 1, 0)
    assert ex.extra == {"generator": "Qwen2-7B-Instruct", "final_answer_correct": False}
    assert {e.id: e for e in data.examples}["gsm8k-3"].step_labels == (1,) * 5


@pytest.mark.slow
def test_baseline_run_rescored_and_compared(tmp_path):
    data = write_processbench(tmp_path / "pb")
    outs = []
    for seed in (0, 1):
        out = tmp_path / f"run{seed}"
        proc = cli("run", "--benchmark", "processbench", "--data", str(data), "--model", "baseline:random",
                   "--seed", str(seed), "--out", str(out), "--no-progress", "--json")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        outs.append(out)
    s = summary(outs[0])
    assert s["complete"] and s["scored"] == 48 and set(s["splits"]) == {"gsm8k", "math", "olympiadbench", "omnimath"}
    lines = [json.loads(x) for x in (outs[0] / "samples.jsonl").read_text().splitlines()]
    assert lines[0]["benchmark"] == "processbench" and len(lines[0]["step_scores"]) == lines[0]["num_steps"]
    # the summary is what the per-sample lines score to, by hand
    recs = [sol(x["id"], x["label"], x["num_steps"], *x["step_scores"]) for x in lines]
    assert s["average_f1"] == pytest.approx(pb.score(recs).average_f1)
    bench = registry.get("processbench")
    numbers = bench.summary_json(bench.read_summary(s))  # the typed summary of a run, back as summary.json has it
    assert list(numbers) == list(s)[: len(numbers)] and numbers == {k: s[k] for k in numbers}
    again = rescored(outs[0])
    assert again["splits"] == s["splits"] and again["ci"] == s["ci"]
    lower = json.loads(cli("score", str(outs[0] / "samples.jsonl"), "--json", "--threshold", "0.2").stdout)
    assert lower["threshold"] == 0.2 and lower["splits"] == pb.score(recs, threshold=0.2).splits
    proc = cli("compare", str(outs[0]), str(outs[1]), "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    assert "average_f1 diff" in proc.stdout.splitlines()[0]
    runs = comparison.load_runs(outs)
    paired, notes = comparison.load_samples(runs)
    assert paired is not None and notes == []
    diffs = comparison.differences(runs, paired).differences[0]
    assert set(diffs) == {"gsm8k", "math", "olympiadbench", "omnimath", "average_f1"}
    assert diffs["average_f1"].value == pytest.approx(summary(outs[1])["average_f1"] - s["average_f1"])
    assert 0 < diffs["average_f1"].p <= 1


def test_bad_input_is_one_error_line(tmp_path):
    data = tmp_path / "pb"
    data.mkdir()
    bad = record("gsm8k", 0, 3, 5)  # label past the last step
    (data / "gsm8k.json").write_text(json.dumps([bad]))
    proc = cli("run", "--benchmark", "processbench", "--data", str(data), "--model", "baseline:random",
               "--out", str(tmp_path / "o"), "--no-progress")  # fmt: skip
    one_error_line(proc, 2, "gsm8k.json: record 0 (id gsm8k-0)", "label 5")
    proc = cli("run", "--benchmark", "processbench", "--data", str(write_processbench(tmp_path / "ok")),
               "--model", "baseline:longer", "--out", str(tmp_path / "o2"), "--no-progress")  # fmt: skip
    one_error_line(proc, 2, "baseline:longer", "process benchmark")
    proc = cli("score", str(tmp_path / "none.jsonl"), "--threshold", "2")
    assert proc.returncode == 2 and "--threshold" in proc.stderr and "Traceback" not in proc.stderr


def test_suite_cells_of_the_process_benchmarks(tmp_path):
    root = tmp_path / "data"
    write_processbench(root / "processbench")
    out = tmp_path / "suite"
    proc = cli("suite", "--model", "baseline:random", "--data", str(root), "--out", str(out), "--no-progress",
               "--benchmarks", "processbench,rm-bench")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = json.loads((out / "suite.json").read_text())["results"]
    cell = table["processbench"]
    s = summary(out / "processbench")
    assert cell["status"] == "complete" and cell["headline"] == "average_f1"
    assert cell["value"] == s["average_f1"] and cell["ci"] == s["ci"]["average_f1"]
    assert table["rm-bench"]["status"] == "missing"
    assert "processbench (average_f1)" in (out / "suite.md").read_text()
    # a baseline without per-step scores leaves the process benchmark out, with the reason, and runs the others
    proc = cli("suite", "--model", "baseline:longer", "--data", str(root), "--out", str(tmp_path / "s2"),
               "--no-progress", "--benchmarks", "processbench")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    cell = json.loads((tmp_path / "s2" / "suite.json").read_text())["results"]["processbench"]
    assert cell["status"] == "missing" and "no per-step score" in cell["why"]


def test_data_fetch_and_a_run_from_the_hub(tmp_path):
    """The hub repository's four JSON files (and its README), served on loopback: `data fetch processbench` keeps
    exactly the split files; a run without data downloads them into the cache."""
    hub_dir = write_processbench(tmp_path / "hub", count=5)
    files = {p.name: p.read_bytes() for p in hub_dir.iterdir()} | {"README.md": b"---\nlicense: apache-2.0\n---\n"}
    with serve_hub({pb_c.HUB_REPO: files}) as fake:
        env = hub_env(tmp_path, fake.url)
        work = tmp_path / "work"
        work.mkdir()
        proc = cli("data", "fetch", "processbench", env=env, cwd=work)
        assert proc.returncode == 0, proc.stderr
        assert "processbench: 20 prompts" in proc.stdout
        fetched = work / "data" / "processbench"
        assert sorted(p.name for p in fetched.iterdir()) == sorted(f"{s}.json" for s in pb_c.SPLITS)
        listing = cli("data", "list", env=env, cwd=work).stdout
        assert "processbench: data/processbench: 20 prompts in 4 file(s)" in listing
        other = tmp_path / "other"
        other.mkdir()
        env["RMBENCH_CACHE_DIR"] = str(tmp_path / "cache")
        proc = cli("run", "--benchmark", "processbench", "--model", "baseline:random", "--json", "--out", "r",
                   "--no-progress", env=env, cwd=other)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["scored"] == 20


def test_a_changed_step_is_refused_by_the_report(tmp_path):
    data = write_processbench(tmp_path / "pb", count=6)
    out = tmp_path / "run"
    proc = cli("run", "--benchmark", "processbench", "--data", str(data), "--model", "baseline:random",
               "--out", str(out), "--no-progress", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = json.loads((data / "math.json").read_text())
    records[1]["steps"][0] = "Another first step."  # same id, same problem: only a step differs
    (data / "math.json").write_text(json.dumps(records))
    proc = cli("report", str(out), "--out", str(tmp_path / "page.html"))
    one_error_line(proc, 2, "differ from")


@pytest.mark.slow
def test_undefined_figures_are_null_with_their_reason_everywhere(tmp_path):
    """A split of one kind of solution (--limit 1: gsm8k-0 is correct): its error acc, F1 and the average F1 are
    null in run --json, summary.json and score --json, each with its reason; the terminal, the API and the report
    page say the same reason; compare gives them no difference (no nan) and says why; nothing fails."""
    from rmbench_client.report import page

    data, out = write_processbench(tmp_path / "pb", count=3), tmp_path / "run"
    proc = cli("run", "--benchmark", "processbench", "--data", str(data), "--model", "baseline:random",
               "--limit", "1", "--out", str(out), "--no-progress", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    printed, s = json.loads(proc.stdout), summary(out)
    assert printed["undefined"] == s["undefined"] == rescored(out)["undefined"]
    assert s["splits"] == {"gsm8k": None} and s["average_f1"] is None and s["details"]["gsm8k"]["error_acc"] is None
    assert s["undefined"] == {
        "gsm8k/error_acc": "no erroneous solution in gsm8k",
        "gsm8k": "F1 of gsm8k: its 1 solution(s) are all correct (no accuracy on erroneous ones)",
        "average_f1": "the average of the splits' F1, and gsm8k has none",
    }
    terminal = cli("score", str(out / "samples.jsonl")).stdout
    assert "undefined: gsm8k: F1 of gsm8k: its 1 solution(s) are all correct" in " ".join(terminal.split())
    result = results.load_result(out)
    assert result.headline == Estimate(None, reason=s["undefined"]["average_f1"])
    assert result.headlines["gsm8k"].reason == s["undefined"]["gsm8k"]
    assert result.headlines["math"] == Estimate(None)  # not scored: absent, not undefined
    row = result.groups[0].numbers
    assert row["F1"].reason == s["undefined"]["gsm8k"] and row["correct acc"] == Estimate(0.0)
    shown = page.build([str(out)])["runs"][0]
    assert f"average_f1: {s['undefined']['average_f1']}" in shown["undefined"]
    assert shown["rows"][0]["why"] == {"error acc": "no erroneous solution in gsm8k", "F1": s["undefined"]["gsm8k"]}
    # compared with another run of the same prompt: no difference of undefined numbers (no nan), a note why
    other = tmp_path / "other"
    proc = cli("run", "--benchmark", "processbench", "--data", str(data), "--model", "baseline:random", "--seed", "1",
               "--limit", "1", "--out", str(other), "--no-progress", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for fmt in ("table", "csv"):
        proc = cli("compare", str(out), str(other), "--format", fmt)
        assert proc.returncode == 0 and "nan" not in proc.stdout.lower(), proc.stdout
        assert "no difference in gsm8k, average_f1, undefined over the shared prompts" in " ".join(proc.stderr.split())
    compared = saved_runs.compare([out, other])
    assert compared.differences == ({},) and any(s["undefined"]["gsm8k"] in n for n in compared.notes)
    assert any("no difference in gsm8k" in n for n in page.build([str(out), str(other)])["comparison"]["why_not"])


def test_a_split_of_erroneous_solutions_only_says_so():
    s = pb.score([sol("math-0", 0, 2, 0.1, 0.9), sol("math-1", 1, 2, 0.9, 0.9)], samples=20)
    assert s.splits == {"math": None}
    assert s.undefined == {
        "math/correct_acc": "no correct solution in math",
        "math": "F1 of math: its 2 solution(s) are all erroneous (no accuracy on correct ones)",
        "average_f1": "the average of the splits' F1, and math has none",
    }
    both = [sol("math-0", 0, 2, 0.1, 0.9), sol("math-1", -1, 2, 0.9, 0.9)]
    assert pb.score(both, samples=20).undefined is msgspec.UNSET
