"""The Python API without servers (baseline runs, files, errors): only `rmbench_client`'s public names are used."""

from __future__ import annotations

import asyncio
import csv
import inspect
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers_cli import CLI, cli
from helpers_data import require_rmbench

import rmbench_client as rmb

BASELINE = {"model": "baseline:random", "benchmark": "rm-bench"}


def test_a_baseline_run_equals_the_clis(tmp_path):
    data = require_rmbench()
    result = rmb.evaluate(BASELINE, data=data, out=tmp_path / "api", limit=12)
    proc = cli("run", "--model", "baseline:random", "--data", str(data), "--out", str(tmp_path / "cli"),
               "--limit", "12", "--json", "--no-progress")  # fmt: skip
    assert proc.returncode == 0 and result.all_scored, proc.stderr  # every prompt of the run scored
    by_cli = json.loads(proc.stdout)
    assert result.summary["overall"] == by_cli["overall"] and result.summary["domains"] == by_cli["domains"]
    assert result.complete is False and result.status == "partial"
    assert any(why.startswith("limit=12: 12 of") for why in result.partial)  # the API's words, not the flag's
    assert (result.prompts, result.scored, result.run_dir) == (12, 12, tmp_path / "api")
    overall = by_cli["overall"]
    assert result.headline_name == "avg"
    assert result.headline == rmb.Estimate(overall["avg"], *overall["ci"]["avg"])
    chat = next(g for g in result.groups if g.name == "chat")
    assert chat.n == 12 and chat.numbers["hard"].value == by_cli["domains"]["chat"]["hard"]
    assert result.metrics()["rm-bench/headline"] == overall["avg"]
    assert rmb.load_result(tmp_path / "api") == replace(result, sent=0)  # read back: the same result


def test_rescore_and_compare_read_what_the_run_wrote(tmp_path):
    data = require_rmbench()
    first = rmb.evaluate(BASELINE, data=data, out=tmp_path / "a", limit=8)
    second = rmb.evaluate(BASELINE | {"seed": 3}, data=data, out=tmp_path / "b", limit=8)
    again = rmb.rescore(first.run_dir / "samples.jsonl")
    assert again.headline == first.headline and again.groups == first.groups
    table = rmb.compare([first.run_dir, second.run_dir])
    assert table.benchmark == "rm-bench" and table.complete == (False, False)
    assert [row["avg"] for row in table.rows] == [first.headlines["avg"], second.headlines["avg"]]


def test_compare_returns_the_paired_differences_the_cli_prints(tmp_path):
    data = require_rmbench()
    first, second = (rmb.evaluate({"model": model, "benchmark": "rm-bench"}, data=data, out=tmp_path / name, limit=30)
                     for name, model in (("a", "baseline:random"), ("b", "baseline:longer")))  # fmt: skip
    table = rmb.compare([first.run_dir, second.run_dir], seed=3)
    proc = cli("compare", str(first.run_dir), str(second.run_dir), "--format", "csv", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    _, printed = csv.DictReader(io.StringIO(proc.stdout))
    (diffs,) = table.differences  # the second run against the first
    assert table.models == ("baseline:random", "baseline:longer") and table.shared == 30 and table.left_out == (0, 0)
    assert list(diffs) == list(table.columns)  # every headline number tested
    for name, d in diffs.items():
        cells = [f"{100 * d.value:.2f}", f"{100 * d.low:.2f}", f"{100 * d.high:.2f}", f"{d.p:.4g}"]
        assert [printed[f"{name} {k}"] for k in ("diff", "low", "high", "p")] == cells, name
        assert printed[f"{name} significant"] == ("yes" if d.significant else "no") and d.significant == (d.p < 0.05)
    avg = diffs["avg"]
    assert avg.value == pytest.approx(second.headline.value - first.headline.value)
    assert avg.low <= avg.value <= avg.high and 0 < avg.p <= 1
    said = " ".join(proc.stderr.split())  # the CLI's notes, as its console wraps them, in its words (--limit 30)
    assert table.notes and all(f"note: {note.replace('limit=30', '--limit 30')}" in said for note in table.notes)
    assert any("limit=30: 30 of" in note for note in table.notes)  # both runs are partial, said in the API's words
    assert not any("--limit" in note for note in table.notes)
    alone = rmb.compare([first.run_dir])
    assert (alone.differences, alone.shared, alone.left_out) == ((), None, ())
    bare = tmp_path / "bare"  # a summary without its samples.jsonl: the numbers, no test, and why
    bare.mkdir()
    (bare / "summary.json").write_bytes((second.run_dir / "summary.json").read_bytes())
    untested = rmb.compare([first.run_dir, bare / "summary.json"])
    assert untested.rows == table.rows and untested.differences == () and untested.shared is None
    assert any("no samples.jsonl beside" in note for note in untested.notes)


def test_compare_refuses_one_path_for_a_sequence(tmp_path):
    for one in (str(tmp_path), tmp_path):
        with pytest.raises(TypeError, match="a sequence of runs, not one path"):
            rmb.compare(one)


def test_compare_of_suite_directories_names_the_runs_to_compare_instead(tmp_path):
    data = require_rmbench()
    suites = [tmp_path / name for name in ("a", "b")]
    for suite in suites:
        rmb.evaluate_suite(BASELINE, benchmarks=["rm-bench"], data_root=data.parent, out=suite, limit=3)
    runs = [str(suite / "rm-bench") for suite in suites]
    with pytest.raises(rmb.DataError, match=re.escape(f"suite directories, not runs: compare one benchmark's runs, "
                                                      f"e.g. compare({runs!r}) (benchmarks: rm-bench)")):  # fmt: skip
        rmb.compare(suites)
    assert rmb.compare(runs).benchmark == "rm-bench"  # as the error says


def test_the_async_form_runs_inside_an_event_loop(tmp_path):
    data = require_rmbench()

    async def main() -> tuple[rmb.BenchmarkResult, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.ensure_future(ticker())
        result = await rmb.evaluate_async(BASELINE, data=data, out=tmp_path / "run", limit=6)
        task.cancel()
        return result, ticks

    result, ticks = asyncio.run(main())
    assert result.scored == 6 and ticks > 0  # the caller's loop kept running during the run
    assert replace(result, sent=0) == rmb.load_result(tmp_path / "run")


def test_errors_are_the_documented_types(tmp_path):
    with pytest.raises(rmb.ConfigError, match="config file not found"):
        rmb.evaluate(tmp_path / "absent.yaml")
    with pytest.raises(rmb.ConfigError, match="unknown benchmark"):
        rmb.evaluate(BASELINE, benchmark="no-such-bench")
    with pytest.raises(rmb.DataError):
        rmb.evaluate(BASELINE, data=tmp_path / "empty-dir-that-is-absent", out=tmp_path / "o")
    with pytest.raises(rmb.DataError, match="not a run directory"):
        rmb.load_result(tmp_path)
    with pytest.raises(rmb.ConfigError, match="no serve section"):
        rmb.with_checkpoint({"model": "m", "roles": {"reward": {"served_model": "m",
                            "endpoints": ["http://127.0.0.1:9"]}}}, tmp_path)  # fmt: skip
    closed = _free_port()
    cfg = {"model": "m", "roles": {"reward": {"served_model": "m", "endpoints": [f"http://127.0.0.1:{closed}"]}}}
    with pytest.raises(rmb.EndpointError):
        rmb.evaluate(cfg, data=require_rmbench(), out=tmp_path / "down", limit=2)
    assert issubclass(rmb.RunLockedError, rmb.UserError) and issubclass(rmb.UserError, rmb.RmbError)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_run_directory_held_by_a_cli_run_is_refused_as_the_cli_refuses(tmp_path):
    """A CLI run waiting on a server that never answers holds the directory: the API's run is refused with
    RunLockedError, as a second CLI run is (one error line, exit 2)."""
    data = require_rmbench()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections, never answers
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    out = tmp_path / "run"
    held = subprocess.Popen([CLI, "run", "--endpoint", url, "--served-model", "m", "--data", str(data), "--out",
                             str(out), "--limit", "2", "--no-progress"], stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (out / ".lock").exists() or not (out / ".lock").read_text().strip():
            assert time.monotonic() < deadline and held.poll() is None
            time.sleep(0.05)
        cfg = {"model": "m", "roles": {"reward": {"served_model": "m", "endpoints": [url]}}}
        with pytest.raises(rmb.RunLockedError, match="another run"):
            rmb.evaluate(cfg, data=data, out=out, limit=2)
        second = cli("run", "--endpoint", url, "--served-model", "m", "--data", str(data), "--out", str(out))
        assert second.returncode == 2 and "another run" in second.stderr
    finally:
        held.kill()
        held.wait()
        silent.close()


def test_no_tracker_library_is_imported_when_off(tmp_path):
    data = require_rmbench()
    code = (
        "import sys, rmbench_client as rmb\n"
        f"rmb.evaluate({BASELINE!r}, data={str(data)!r}, out={str(tmp_path / 'run')!r}, limit=3)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlflow', 'wandb')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"


def test_the_package_exports_only_its_api():
    names = set(rmb.__all__)
    assert {"evaluate", "evaluate_suite", "serve", "watch", "rescore", "compare", "RmbError"} <= names
    for name in names:
        assert getattr(rmb, name) is not None
    import rmbench_client.config.schema  # noqa: F401 - a submodule's import never shadows an exported function

    assert inspect.isfunction(rmb.load_config) and inspect.isfunction(rmb.watch) and inspect.isfunction(rmb.serve)
    assert (Path(rmb.__file__).parent / "py.typed").is_file()


def test_importing_the_package_changes_nothing_in_the_process():
    """`import rmbench_client` sets no environment variable (none for BLAS either), puts no placeholder or other
    module into sys.modules beside what it really imports, and replaces none."""
    script = (
        "import json, os, sys\n"
        "env, modules = dict(os.environ), dict(sys.modules)\n"
        "import rmbench_client\n"
        "added = {k: v for k, v in sys.modules.items() if k not in modules}\n"
        "print(json.dumps({'env': dict(os.environ) == env, 'blas': sorted(k for k in os.environ if 'BLAS' in k),\n"
        "    'replaced': sorted(k for k, v in modules.items() if sys.modules.get(k) is not v),\n"
        "    'added': sorted(added), 'placeholders': sorted(k for k, v in added.items() if v is None)}))\n"
    )
    env = {k: v for k, v in os.environ.items() if "BLAS" not in k}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    found = json.loads(proc.stdout)
    assert found["env"] and found["blas"] == [] and found["replaced"] == [] and found["placeholders"] == []
    assert "rmbench_client" in found["added"] and not any(n.startswith("httpx") for n in found["added"])


def test_an_override_through_a_value_that_is_no_mapping_is_one_error_on_every_path(tmp_path):
    """`client: 5` with `client.workers` set over it: the API (a mapping or a file) and the command line give the
    same error, naming where the config came from; a mapping given to the API is never changed."""
    why = "client.workers: client is not a mapping in the config"
    given = {"model": "baseline:random", "client": 5}
    with pytest.raises(rmb.ConfigError, match=re.escape(f"config: {why}")):
        rmb.load_config(given, {"client.workers": 2})
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(given))
    with pytest.raises(rmb.ConfigError, match=re.escape(f"{path}: {why}")):
        rmb.load_config(path, {"client.workers": 2})
    proc = cli("run", "--config", str(path), "--workers", "2")
    assert proc.returncode == 2 and proc.stderr == f"error: {path}: {why}\n"
    nested = {"model": "baseline:random", "client": {"workers": 1}}
    assert rmb.load_config(nested, {"client.workers": 3}).client.workers == 3
    assert nested == {"model": "baseline:random", "client": {"workers": 1}}


def test_a_benchmark_named_without_data_is_a_data_error_in_the_apis_words(tmp_path):
    """evaluate_suite(benchmarks=[...]) with a benchmark whose data is not there raises before anything runs; a
    message the command line shares with the API names the API's keyword, not the flag."""
    data = require_rmbench()
    root = tmp_path / "data"
    root.mkdir()
    (root / "rm-bench").symlink_to(data)
    with pytest.raises(rmb.DataError, match=r"benchmark reward-bench-2: no data in .*reward-bench-2"):
        rmb.evaluate_suite(BASELINE, benchmarks=["rm-bench", "reward-bench-2"], data_root=root, out=tmp_path / "s")
    assert not (tmp_path / "s").exists()  # nothing ran
    suite = rmb.evaluate_suite(BASELINE, data_root=root, out=tmp_path / "s", limit=4)  # not named: only left out
    assert suite.missing and "reward-bench-2" in suite.missing and suite.status == "partial"
    with pytest.raises(rmb.DataError) as info:  # own pairs have no hub copy: the data must be given
        rmb.evaluate({"model": "baseline:random", "benchmark": "pairwise"}, out=tmp_path / "p")
    assert "data=PATH" in str(info.value) and "--data" not in str(info.value)
    with pytest.raises(TypeError, match="a sequence of names"):
        rmb.evaluate_suite(BASELINE, benchmarks="rm-bench")  # type: ignore[arg-type]


def test_the_report_page_for_the_trackers_is_built_from_the_loaded_prompts_once(tmp_path, caplog):
    """Two trackers, one page, and the data read once: by the run (the shared RM-Bench copy has no math file, so
    loading it says once that the run will be partial)."""

    class Keeping:
        def __init__(self) -> None:
            self.artifacts: list[list[str]] = []

        def log(self, metrics, step, artifacts=()):  # noqa: ANN001, ANN202
            self.artifacts.append([p.name for p in artifacts])

        def close(self) -> None:
            pass

    first, second = Keeping(), Keeping()
    with caplog.at_level("INFO", logger="rmbench_client"):
        rmb.evaluate(BASELINE, data=require_rmbench(), out=tmp_path / "run", limit=5, trackers=[first, second])
    assert first.artifacts == second.artifacts == [["summary.json", "report.html"]]
    assert sum("the run will be partial" in r.getMessage() for r in caplog.records) == 1


def test_a_data_root_that_is_not_there_is_one_data_error_before_anything_runs(tmp_path):
    """`data_root` mistyped (or `data/` looked for from another directory) is no suite of ten missing benchmarks:
    one DataError naming it, nothing written; the command line says the same in one error line."""
    nowhere = tmp_path / "no-such-data"
    with pytest.raises(rmb.DataError, match=re.escape(f"data root {nowhere}: no such directory")):
        rmb.evaluate_suite(BASELINE, data_root=nowhere, out=tmp_path / "s", limit=4)
    assert not (tmp_path / "s").exists()
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    with pytest.raises(rmb.DataError, match=re.escape(f"data root {nowhere}: no such directory")):
        rmb.watch(checkpoints, BASELINE, out=tmp_path / "w", data_root=nowhere, once=True)  # no checkpoint yet
    assert not (tmp_path / "w").exists()
    proc = cli("suite", "--model", "baseline:random", "--data", str(nowhere), "--out", str(tmp_path / "c"))
    said = f"error: data root {nowhere}: no such directory (one folder per benchmark, as `rmbench-client data "
    said += "fetch` puts them)"
    assert proc.returncode == 2 and proc.stderr.strip() == said, proc.stderr
    assert not (tmp_path / "c").exists()


def test_serve_takes_a_config_as_every_function_does(tmp_path):
    """`serve` takes a YAML path or a mapping as `evaluate` does (docs/python-api.md: "A config is ..."), not only
    a RunConfig: a config with nothing to serve is the ConfigError that says so, not an AttributeError."""
    mapping = {"model": "m", "roles": {"reward": {"served_model": "m", "endpoints": ["http://127.0.0.1:9"]}}}
    path = tmp_path / "eval.yaml"
    path.write_text(json.dumps(mapping))  # JSON is YAML
    for source in (mapping, path, str(path), rmb.load_config(mapping)):
        with pytest.raises(rmb.ConfigError, match="no role in the config has a 'serve' section"):
            with rmb.serve(source):
                pass
    with pytest.raises(rmb.ConfigError, match=re.escape(f"{tmp_path / 'none.yaml'}: config file not found")):
        with rmb.serve(tmp_path / "none.yaml"):
            pass


def test_serve_refuses_one_role_name_for_a_sequence():
    """`roles="reward"` is not read as the roles r, e, w, a, r, d: refused as `benchmarks="rm-bench"` is."""
    config = {"model": "m", "roles": {"reward": {"served_model": "m", "endpoints": ["http://127.0.0.1:9"],
                                                 "serve": {"engine": "vllm-cpu", "path": "/nope"}}}}  # fmt: skip
    with pytest.raises(TypeError, match=re.escape("roles takes a sequence of names, not one: roles=['reward']")):
        with rmb.serve(config, roles="reward"):  # type: ignore[arg-type]
            pass
