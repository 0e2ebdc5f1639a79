"""`rmbench-client suite`: every benchmark whose data is present, one run directory each under the model's
directory, and the table of their headline numbers; resumable; `compare` and `report` over suite directories.
Baselines need no server; the reward model runs through a real vLLM CPU server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import CpuServers
from helpers_cli import CLI, cli, one_error_line, stored
from helpers_data import require_rmbench
from helpers_pairs import write_pairs
from hub_schemas import FILTERED_SCHEMA, RB2_SCHEMA, filtered_record, rb2_record, write_parquet
from ppe_fixture import battle, best_of_k, write_correctness, write_preference
from rmb_fixture import pair, write_rmb
from test_judgebench import RECORDS as JUDGEBENCH_RECORDS
from test_judgebench import hub_split

import rmbench_client as rmb
from rmbench_client.benchmarks.registry import names

PAIRS = [
    {"prompt": "Name a prime.", "chosen": "Seven is a prime number.", "rejected": "Nine.", "subset": "math"},
    {"prompt": "Capital of France?", "chosen": "Paris.", "rejected": "Lyon, I think.", "subset": "geo"},
]


def data_root(tmp_path: Path, *, rb: bool = True) -> Path:
    """rm-bench (chat only: partial), pairwise and RewardBench 2 fixtures; RewardBench with `rb`."""
    root = tmp_path / "data"
    (root / "rm-bench").mkdir(parents=True)
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text())[:3]
    (root / "rm-bench" / "chat_filtered.json").write_text(json.dumps(records))
    (root / "pairwise").mkdir()
    (root / "pairwise" / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    four = ["The right answer, stated plainly.", "A wrong answer.", "Another wrong one.", "Off topic entirely."]
    rb2 = [rb2_record(f"{i}", s, four[:1], four[1:], prompt=f"Question {i}?") for i, s in enumerate(("Math", "Focus"))]
    write_parquet(root / "reward-bench-2" / "test-00000-of-00001.parquet", rb2, RB2_SCHEMA)
    write_rmb(root / "rmb", [pair("1", "Helpfulness/Chat/Discussion", "What is 2+2?", "It is 4.", "It is 5.")])
    hub_split(root / "judgebench", "gpt", JUDGEBENCH_RECORDS)
    write_preference(root / "ppe-preference", [battle("b1", "model_a", "A fuller answer.", "Hm."),
                                               battle("b2", "model_b", "No.", "Yes, and here is why.")])  # fmt: skip
    math_row = best_of_k("math", 0, ["x = 4, since 2x = 8.", "4", "x = 5"], [True, True, False], [[0, 2], [2, 1]])
    write_correctness(root / "ppe-correctness", {"math": [math_row]})  # one set of five: partial
    if rb:
        filtered = [filtered_record(i, s, "A helpful answer.", "Bad.") for i, s in enumerate(("alpacaeval-easy",))]
        write_parquet(root / "reward-bench" / "filtered-00000-of-00001.parquet", filtered, FILTERED_SCHEMA)
    return root


def suite(*args: str) -> dict:
    proc = cli("suite", "--json", "--no-progress", *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(json.loads(proc.stdout))


@pytest.mark.slow
def test_a_baseline_suite_runs_what_is_present_marks_the_rest_and_compares(tmp_path: Path) -> None:
    root = data_root(tmp_path, rb=False)
    longer, rand = tmp_path / "runs" / "longer", tmp_path / "runs" / "random"
    got = suite("--model", "baseline:longer", "--data", str(root), "--out", str(longer))
    results = got["results"]
    assert got["benchmarks"] == list(names())  # the registry's, in its order: a new benchmark joins by itself
    present = ("rm-bench", "reward-bench-2", "pairwise", "rmb", "judgebench", "ppe-preference", "ppe-correctness")
    assert all(c["status"] == "missing" for n, c in results.items() if n not in present)
    assert (
        results["reward-bench"]["status"] == "missing" and "data fetch reward-bench" in results["reward-bench"]["why"]
    )
    assert results["rm-bench"]["status"] == "partial" and "math, code, safety" in results["rm-bench"]["why"]
    assert results["rmb"]["status"] == "partial" and results["rmb"]["value"] is not None
    note = next(line for line in (longer / "suite.md").read_text().splitlines() if ", rmb: partial" in line)
    assert len(note) < 400 and note.endswith(f"(all in {longer / 'rmb'}/summary.json)")  # RMB lists 95 missing
    assert results["pairwise"]["status"] == "complete" and results["reward-bench-2"]["status"] == "partial"
    for name in ("rm-bench", "reward-bench-2", "pairwise"):  # each headline is its run's own number
        summary = json.loads((longer / name / "summary.json").read_text())
        assert results[name]["run_dir"] == str(longer / name)
        own = {"rm-bench": lambda s: s["overall"]["avg"], "reward-bench-2": lambda s: s["score"],
               "pairwise": lambda s: s["macro_accuracy"]}  # fmt: skip
        assert results[name]["value"] == own[name](summary)
    assert (
        results["rm-bench"]["ci"]
        == json.loads((longer / "rm-bench" / "summary.json").read_text())["overall"]["ci"]["avg"]
    )
    table = (longer / "suite.md").read_text()
    assert "| baseline:longer |" in table and "(partial)" in table and "| missing |" in table
    assert json.loads((longer / "suite.json").read_text()) == got
    proc = cli("status", str(longer), "--json")  # a model's directory: each of its runs
    assert proc.returncode == 0, proc.stderr
    found = {r["benchmark"]: r["complete"] for r in json.loads(proc.stdout)["runs"]}
    assert found == {"pairwise": True, "reward-bench-2": False, "rm-bench": False, "rmb": False, "judgebench": True,
                     "ppe-preference": True, "ppe-correctness": False}  # fmt: skip
    assert (
        results["ppe-preference"]["headline"] == "accuracy" and results["ppe-preference"]["value"] == 1.0
    )  # longer wins both
    assert results["ppe-correctness"]["status"] == "partial" and results["ppe-correctness"]["value"] == 0.5

    dry = cli("suite", "--model", "baseline:longer", "--data", str(root), "--out", str(longer), "--dry-run", "--json")
    planned = json.loads(dry.stdout)
    assert planned["reward-bench"] == {"missing": results["reward-bench"]["why"]}
    assert planned["pairwise"]["to_send"] == 0 and planned["pairwise"]["stored_prompts"] == len(PAIRS)
    only = suite("--model", "baseline:random", "--data", str(root), "--out", str(rand), "--benchmarks", "pairwise")
    assert only["benchmarks"] == ["pairwise"] and not (rand / "rm-bench").exists()
    suite("--model", "baseline:random", "--data", str(root), "--out", str(rand), "--benchmarks", "rm-bench")
    assert list(json.loads((rand / "suite.json").read_text())["results"]) == ["rm-bench", "pairwise"]  # kept

    proc = cli("compare", str(longer), str(rand))
    assert proc.returncode == 0, proc.stderr
    assert "| baseline:longer |" in proc.stdout and "| baseline:random |" in proc.stdout
    headings = [line for line in proc.stdout.splitlines() if line.endswith(":") and " " not in line]
    assert headings == ["rm-bench:", "pairwise:"]  # the benchmarks both suites scored
    proc = cli("report", str(longer), str(rand), "--out", str(tmp_path / "pages"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "pages").iterdir()) == ["report-pairwise.html", "report-rm-bench.html"]
    one_error_line(cli("compare", str(longer), str(longer / "pairwise")), 2, "not a suite directory")
    one_error_line(cli("suite", "--model", "baseline:longer", "--benchmarks", "rm-bench,nope"), 2, "nope")


@pytest.mark.slow
def test_malformed_data_marks_its_benchmark_and_the_others_still_run(tmp_path: Path) -> None:
    root = data_root(tmp_path)
    (root / "pairwise" / "pairs.jsonl").write_text('{"prompt": "no responses"}\n')
    out = tmp_path / "runs" / "m"
    proc = cli("suite", "--json", "--no-progress", "--model", "baseline:longer", "--data", str(root), "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert results["pairwise"]["status"] == "error" and "pairs.jsonl" in results["pairwise"]["why"]
    assert results["reward-bench"]["status"] == "partial" and "| error |" in (out / "suite.md").read_text()
    # the benchmark that failed before its run directory existed names none; the others name theirs
    assert not (out / "pairwise").exists() and str(out / "pairwise") not in proc.stderr
    assert "pairwise: not run: " in proc.stderr and f"reward-bench: {out / 'reward-bench'}" in proc.stderr


def kept(out: Path) -> dict[Path, bytes]:
    """Every file of the run directories, byte for byte: SQLite's own -wal/-shm files aside (they come and go as
    connections open and close; what a store holds is in its main file once its last connection closed)."""
    return {p: p.read_bytes() for p in out.rglob("*")
            if p.is_file() and p.name != ".lock" and not p.name.endswith(("-wal", "-shm"))}  # fmt: skip


@pytest.mark.server
def test_a_reward_model_suite_through_vllm_resumes_with_nothing_sent(cpu_servers: CpuServers, tmp_path: Path) -> None:
    root = data_root(tmp_path)
    reward = cpu_servers.config.roles["reward"].to_data() | {"serve": None}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"model": "tiny-reward", "roles": {"reward": reward}}))
    out = tmp_path / "runs" / "tiny-reward"
    first = suite("--config", str(config), "--data", str(root), "--out", str(out))
    ran = {n: c["status"] for n, c in first["results"].items() if c["status"] != "missing"}
    assert ran == {
        "rm-bench": "partial",  # chat only
        "reward-bench": "partial",  # one subset of RewardBench's
        "reward-bench-2": "partial",  # no Ties
        "pairwise": "complete",
        "rmb": "partial",  # one scenario
        "judgebench": "complete",
        "ppe-preference": "complete",
        "ppe-correctness": "partial",  # one set of five
    }
    assert all(first["results"][n]["value"] is not None and len(first["results"][n]["ci"]) == 2 for n in ran)
    counts = {n: stored(out / n) for n in ran}
    dry = cli("suite", "--config", str(config), "--data", str(root), "--out", str(out), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert {n: p["to_send"] for n, p in json.loads(dry.stdout).items() if n in ran} == dict.fromkeys(ran, 0)
    again = suite("--config", str(config), "--data", str(root), "--out", str(out))
    made, before = again.pop("stamp"), first.pop("stamp")  # what made each table: its own command, and when
    assert made["command"].startswith("rmbench-client suite --json") and made["written"] >= before["written"]
    assert again == first and {n: stored(out / n) for n in ran} == counts  # nothing scored again

    files = kept(out)
    dead = tmp_path / "dead.yaml"
    dead.write_text(
        yaml.safe_dump({"model": "tiny-reward", "roles": {"reward": reward | {"endpoints": ["http://127.0.0.1:9"]}}})
    )
    proc = cli("suite", "--config", str(dead), "--data", str(root), "--out", str(out), "--no-progress")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 1 and len(errors) == 1 and "127.0.0.1:9" in errors[0] and "Traceback" not in proc.stderr
    assert kept(out) == files  # nothing lost


def test_dry_run_with_fresh_counts_what_a_fresh_run_would_send(tmp_path):
    """`--fresh` removes the store, so `--dry-run --fresh` counts every unit as to be sent (`run` and `suite`), and
    still changes nothing: the store keeps what the partial run put in it."""
    root = tmp_path / "data"
    (root / "pairwise").mkdir(parents=True)
    (root / "pairwise" / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    suite_out = tmp_path / "suite"
    out = suite_out / "pairwise"
    flags = ["--model", "baseline:longer", "--benchmark", "pairwise", "--data", str(root / "pairwise")]
    assert cli("run", *flags, "--out", str(out), "--limit", "1").returncode == 0
    kept = stored(out)
    resumed = json.loads(cli("run", *flags, "--out", str(out), "--dry-run", "--json").stdout)
    assert resumed["stored_prompts"] == 1 and resumed["to_send"] < resumed["units"]
    fresh = json.loads(cli("run", *flags, "--out", str(out), "--dry-run", "--fresh", "--json").stdout)
    assert fresh["fresh"] and fresh["stored_prompts"] == fresh["stored_units"] == 0
    assert fresh["to_send"] == fresh["units"] and fresh["pending_prompts"] == len(PAIRS)
    text = cli("run", *flags, "--out", str(out), "--dry-run", "--fresh").stdout
    assert "not used: --fresh forgets what is stored" in text and f"for {len(PAIRS)} prompts" in text
    whole = cli("suite", "--model", "baseline:longer", "--data", str(root), "--out", str(suite_out),
                "--benchmarks", "pairwise", "--dry-run", "--fresh", "--json")  # fmt: skip
    assert json.loads(whole.stdout)["pairwise"] == fresh
    assert stored(out) == kept  # nothing forgotten by a dry run


def once_scoring(run_dir: Path, then: Callable[[], None]) -> None:
    """`then()` once the run in `run_dir` has scored a prompt (its progress.jsonl has a line), from a thread."""

    def wait() -> None:
        progress, deadline = run_dir / "progress.jsonl", time.monotonic() + 60
        while not (progress.exists() and progress.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.002)
        then()

    threading.Thread(target=wait, daemon=True).start()


@pytest.mark.slow
def test_a_suite_a_signal_stopped_lists_the_benchmarks_it_never_ran_as_not_run_not_missing(tmp_path: Path) -> None:
    """SIGTERM (Slurm's preemption) while the suite's first benchmark scores: the benchmarks after it, whose data is
    there, are "not run" in suite.json and suite.md ("missing" says there is no data), and in the API's `not_run`
    (the suite's status aborted); one with an earlier run in the directory keeps that run's result."""
    data = tmp_path / "data"
    write_pairs(data / "pairwise" / "pairs.jsonl", 3000)
    (data / "rm-bench").symlink_to(require_rmbench())
    write_rmb(data / "rmb", [pair("1", "Helpfulness/Chat/Discussion", "What is 2+2?", "It is 4.", "It is 5.")])
    stopped = "the suite was interrupted by SIGTERM before it"
    baseline = {"model": "baseline:random", "type": "baseline"}

    caught: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda s, f: caught.append(s))  # a training script's, which returns
    try:
        once_scoring(tmp_path / "api" / "pairwise", lambda: os.kill(os.getpid(), signal.SIGTERM))
        result = rmb.evaluate_suite(baseline, benchmarks=["pairwise", "rm-bench"], data_root=data,
                                    out=tmp_path / "api", limit=600)  # fmt: skip
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert caught == [signal.SIGTERM] and list(result.results) == ["pairwise"], result
    assert result.not_run == {"rm-bench": stopped} and not result.missing
    assert result.status == "aborted" and not result.complete
    cells = json.loads((tmp_path / "api" / "suite.json").read_text())["results"]
    assert cells["rm-bench"] == {"status": "not run", "why": stopped}

    out = tmp_path / "cli"
    assert rmb.evaluate(baseline, benchmark="rmb", data=data / "rmb", out=out / "rmb").status == "partial"
    args = [CLI, "suite", "--json", "--no-progress", "--model", "baseline:random", "--data", str(data), "--out",
            str(out), "--benchmarks", "pairwise,rm-bench,rmb", "--limit", "600"]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    once_scoring(out / "pairwise", lambda: proc.send_signal(signal.SIGTERM))
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr[-2000:]
    cells = json.loads(stdout)["results"]
    assert cells["rm-bench"] == {"status": "not run", "why": stopped}
    assert cells["rmb"]["status"] == "partial" and cells["rmb"]["run_dir"] == str(out / "rmb")  # the earlier run's
    table = (out / "suite.md").read_text()
    assert "| not run |" in table and f"- baseline:random, rm-bench: not run: {stopped}" in table
    assert json.loads((out / "suite.json").read_text())["results"] == cells


BETWEEN_RUNS = """
import json, os, signal, sys
import rmbench_client as rmb

data, out = sys.argv[1], sys.argv[2]
seen = []
signal.signal(signal.SIGTERM, lambda s, f: seen.append(os.path.exists(os.path.join(out, "suite.json"))))

class Preempting:  # a tracker that is logging the first benchmark when Slurm's SIGTERM comes
    def log(self, metrics, step, artifacts=()):
        if not seen:
            os.kill(os.getpid(), signal.SIGTERM)
    def close(self):
        pass

result = rmb.evaluate_suite({"model": "baseline:random", "type": "baseline"}, benchmarks=["pairwise", "rmb"],
                            data_root=data, out=out, trackers=[Preempting()], step=1)
print(json.dumps({"status": result.status, "ran": list(result.results), "not_run": result.not_run, "seen": seen}))
"""


def test_a_signal_between_two_benchmarks_of_a_suite_stops_it_before_the_next(tmp_path: Path) -> None:
    """SIGTERM while a plain script's suite logs its first benchmark to a tracker (between two runs, where the run's
    handlers are gone): the suite starts no further benchmark (`not_run`, "not run" in suite.json) and the script's
    handler gets the signal once the table is written. It went to the handler at once and the suite ran on."""
    data, out = tmp_path / "data", tmp_path / "suite"
    write_pairs(data / "pairwise" / "pairs.jsonl", 4)
    write_rmb(data / "rmb", [pair("1", "Helpfulness/Chat/Discussion", "What is 2+2?", "It is 4.", "It is 5.")])
    proc = subprocess.run([sys.executable, "-c", BETWEEN_RUNS, str(data), str(out)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    stopped = "the suite was interrupted by SIGTERM before it"
    said = json.loads(proc.stdout.splitlines()[-1])
    assert said == {"status": "aborted", "ran": ["pairwise"], "not_run": {"rmb": stopped}, "seen": [True]}
    cells = json.loads((out / "suite.json").read_text())["results"]
    assert cells["rmb"] == {"status": "not run", "why": stopped} and cells["pairwise"]["status"] == "complete"
    assert not (out / "rmb").exists()
