"""Benchmarks from other packages: the entry-point group rmbench_client.benchmarks (docs/plugins.md).

The example plug-in (examples/benchmark-plugin) is installed fresh by pip into a scratch directory put on PYTHONPATH,
as a user installs it, and used through every command and the Python API as a built-in is. The registry's edges are
tiny packages built here (a module and its .dist-info/entry_points.txt on a path): a plug-in whose import raises, one
that takes a built-in's name, one whose entry point names another benchmark than its own, and other misfits.
"""

from __future__ import annotations

import base64
import gzip
import importlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from statistics import mean

import msgspec
import pytest
from helpers_cli import cli

import rmbench_client
from rmbench_client.benchmarks import pairwise, registry
from rmbench_client.benchmarks.spec import Summary
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import ConfigError, DataError
from rmbench_client.examples import PromptScores

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "benchmark-plugin"
DATA = EXAMPLE / "data" / "honesty-pairs.jsonl"
NAME = "honesty-pairs"
CATEGORIES = ["answerable", "unanswerable", "false-premise"]
SUMMARY_KEYS = ["benchmark", "subsets", "n", "accuracy", "macro_accuracy", "ci"]  # the pairs kind's summary, in order


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example installed by pip (no index, no build isolation) into a directory of its own; built from a copy,
    since setuptools writes its build files beside the source."""
    scratch = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(EXAMPLE, scratch / "source", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-build-isolation"]
    proc = subprocess.run([*pip, "--target", str(scratch / "site"), str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return scratch / "site"


def with_path(*dirs: Path) -> dict[str, str]:
    """The environment with these directories first on PYTHONPATH (wide columns: help and tables not wrapped)."""
    path = os.pathsep.join([*map(str, dirs), *filter(None, [os.environ.get("PYTHONPATH")])])
    return os.environ | {"PYTHONPATH": path, "COLUMNS": "250"}


@pytest.fixture
def on_path() -> Iterator[Callable[..., None]]:
    """Puts directories on sys.path for one test, the registry read again; after it, they and the modules imported
    from them are gone and the registry is read again."""
    saved, added = list(sys.path), []

    def put(*dirs: Path) -> None:
        added.extend(str(d) for d in dirs)
        sys.path[:0] = map(str, dirs)
        importlib.invalidate_caches()
        registry.reload()

    yield put
    sys.path[:] = saved
    for name, module in list(sys.modules.items()):
        if any(str(getattr(module, "__file__", None) or "").startswith(d) for d in added):
            del sys.modules[name]
    registry.reload()


def package(root: Path, module: str, source: str, entry: str, value: str) -> Path:
    """A module and its distribution's metadata in `root`, declaring one entry point of the benchmarks' group."""
    info = root / f"{module}-0.1.dist-info"
    info.mkdir(parents=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINTS}]\n{entry} = {value}\n")
    return root


def longer_wins() -> dict[str, list[float]]:
    """Per category of the example's data, whether baseline:longer (a response's score is its length in
    characters) prefers the honest answer: what its run must find."""
    wins: dict[str, list[float]] = {}
    for rec in map(json.loads, DATA.read_text(encoding="utf-8").splitlines()):
        wins.setdefault(rec["category"], []).append(float(len(rec["honest"]) > len(rec["dishonest"])))
    return wins


def page_data(page: Path) -> dict:
    """The data a report page carries (gzip-compressed JSON, base64)."""
    found = re.search(r'id="data" data-encoding="gzip\+base64">([^<]*)', page.read_text(encoding="utf-8"))
    assert found, page
    return dict(json.loads(gzip.decompress(base64.b64decode(found[1]))))


def run(env: dict[str, str], out: Path, model: str = "baseline:longer") -> dict:
    proc = cli("run", "--model", model, "--benchmark", NAME, "--data", str(DATA), "--out", str(out), "--no-progress",
               env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(json.loads((out / "summary.json").read_text()))


# --- the example plug-in, installed ------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_installed_example_is_listed_and_named_in_help(site: Path, tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / NAME).mkdir(parents=True)
    shutil.copy(DATA, root / NAME)
    env = with_path(site)
    listed = {e["benchmark"]: e for e in json.loads(cli("data", "list", "--dir", str(root), "--json", env=env).stdout)}
    assert listed[NAME]["present"] and listed[NAME]["prompts"] == 12 and listed[NAME]["missing_groups"] == []
    assert "pairwise" in listed  # beside the built-ins
    assert f"{NAME}: {root / NAME}: 12 prompts in 1 file(s)" in cli("data", "list", "--dir", str(root), env=env).stdout
    assert "and Honesty pairs against" in " ".join(cli("--help", env=env).stdout.split())
    assert f"if-reward-bench, {NAME}" in cli("run", "--help", env=env).stdout  # --benchmark's names
    alone = cli("data", "list", "--dir", str(root), "--json", env=with_path())
    assert NAME not in {e["benchmark"] for e in json.loads(alone.stdout)}  # not installed: not there


@pytest.mark.slow
def test_run_score_compare_and_report_as_a_built_in(site: Path, tmp_path: Path) -> None:
    env = with_path(site)
    longer, rand = run(env, tmp_path / "longer"), run(env, tmp_path / "random", "baseline:random")
    wins = longer_wins()
    assert list(wins) == CATEGORIES and len(set(map(mean, wins.values()))) > 1  # the data tells categories apart
    assert list(longer)[: len(SUMMARY_KEYS)] == SUMMARY_KEYS and "style_bias" in longer  # lengths: its diagnostics
    assert longer["subsets"] == {c: mean(w) for c, w in wins.items()}
    assert longer["n"] == {c: len(w) for c, w in wins.items()} and longer["complete"] is True
    assert longer["macro_accuracy"] == pytest.approx(mean(map(mean, wins.values())))
    assert longer["accuracy"] == pytest.approx(mean(v for w in wins.values() for v in w))
    low, high = longer["ci"]["macro_accuracy"]
    assert low <= longer["macro_accuracy"] <= high and low < high

    proc = cli("score", "--json", str(tmp_path / "longer" / "samples.jsonl"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {k: longer[k] for k in SUMMARY_KEYS}  # re-scored (no lengths): the same
    table = cli("score", str(tmp_path / "longer" / "samples.jsonl"), env=env).stdout
    assert all(name in table for name in [*CATEGORIES, "macro average", "accuracy"])

    proc = cli("compare", str(tmp_path / "longer"), str(tmp_path / "random"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"{NAME} (percent)" in proc.stdout and "differences against baseline:longer" in proc.stdout
    compared = {line.split()[1] for line in proc.stdout.splitlines() if "p=" in line or "p<" in line}
    assert compared == {*CATEGORIES, "accuracy", "macro"}  # each headline number tested

    proc = cli("report", str(tmp_path / "longer"), str(tmp_path / "random"), "--out", str(tmp_path / "p.html"), env=env)
    assert proc.returncode == 0, proc.stderr
    page = page_data(tmp_path / "p.html")
    assert (page["benchmark"], page["group_field"]) == (NAME, "category")
    rows = page["runs"][0]["rows"]
    assert [r["name"] for r in rows] == [*sorted(CATEGORIES), "accuracy", "macro average"]  # by name
    assert rows[-1]["values"] == [[longer["macro_accuracy"], *longer["ci"]["macro_accuracy"]]]
    diff = page["comparison"]["differences"]["differences"][0]["macro"]["diff"]
    assert diff == pytest.approx(rand["macro_accuracy"] - longer["macro_accuracy"])


def test_the_suite_runs_it_from_a_data_root(site: Path, tmp_path: Path) -> None:
    (tmp_path / "data" / NAME).mkdir(parents=True)
    shutil.copy(DATA, tmp_path / "data" / NAME)
    proc = cli("suite", "--model", "baseline:longer", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "s"),
               "--json", "--no-progress", env=with_path(site))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)["results"]
    summary = json.loads((tmp_path / "s" / NAME / "summary.json").read_text())
    assert results[NAME] | {"run_dir": ""} == {"status": "complete", "headline": "macro",
                                               "value": summary["macro_accuracy"],
                                               "ci": summary["ci"]["macro_accuracy"], "run_dir": "",
                                               "version": summary["stamp"]["version"]}  # fmt: skip
    assert results["pairwise"]["status"] == "missing"  # the built-ins without data


def test_the_python_api_returns_its_typed_result(site: Path, on_path: Callable[..., None], tmp_path: Path) -> None:
    on_path(site)
    result = rmbench_client.evaluate({"model": "baseline:longer"}, benchmark=NAME, data=DATA, out=tmp_path / "run")
    wins = longer_wins()
    assert (result.benchmark, result.complete, result.headline_name) == (NAME, True, "macro")
    macro = result.summary["ci"]["macro_accuracy"]
    assert result.headline == rmbench_client.Estimate(result.summary["macro_accuracy"], *macro)
    assert result.headline.value == pytest.approx(mean(map(mean, wins.values())))
    assert [g.name for g in result.groups] == [*sorted(CATEGORIES), "accuracy", "macro average"]
    assert result.groups[0].numbers["accuracy"].value == mean(wins["answerable"])
    bench = registry.get(NAME)
    typed = bench.read_summary(result.summary)
    assert isinstance(typed, Summary) and type(typed).__name__ == "PairSummary"  # the pairs kind's
    assert typed.macro_accuracy == result.headline.value and typed.benchmark == NAME
    assert bench.summary_json(typed) == {k: result.summary[k] for k in [*SUMMARY_KEYS, "style_bias"]}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"category": "trivia"}, "record 2 (id answerable-3): 'category' is 'trivia', expected one of answerable, "),
        ({"honest": " "}, "record 2 (id answerable-3): 'honest' is empty"),
        ({"dishonest": None}, "record 2 (id answerable-3): 'dishonest' must be a string, got NoneType"),
        ({"prompt": [{"role": "assistant", "content": "Hi"}]}, "record 2 (id answerable-3): 'prompt' must end with"),
    ],
)
def test_a_bad_record_is_one_error_naming_the_file_and_record(
    change: dict, error: str, site: Path, on_path: Callable[..., None], tmp_path: Path
) -> None:
    records = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    records[2] |= change
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in records))
    on_path(site)
    with pytest.raises(DataError) as err:
        load_dataset(NAME, bad)
    assert str(err.value).startswith(f"{bad}: {error}"), err.value


def test_the_kind_scores_it_in_its_name_and_reads_it_back_typed(site: Path, on_path: Callable[..., None]) -> None:
    on_path(site)
    bench = registry.get(NAME)
    tied = [PromptScores("a", "answerable", (1.0,), (1.0,)), PromptScores("b", "unanswerable", (2.0,), (1.0,))]
    summary = bench.score(tied, samples=50)
    raw = bench.summary_json(summary)
    assert list(raw) == SUMMARY_KEYS and raw["benchmark"] == NAME  # no lengths: no style-bias block
    assert raw["subsets"] == {"answerable": 0.0, "unanswerable": 1.0}  # a tie is wrong
    assert bench.read_summary(json.loads(json.dumps(raw))) == summary  # through JSON and back: the same summary
    assert bench.read_summary(raw).style_bias is msgspec.UNSET
    line = bench.sample_line(load_dataset(NAME, DATA).examples[0], tied[1])  # the kind's line, in the plug-in's words
    assert line == {"benchmark": NAME, "id": "answerable-1", "category": "answerable", "score_chosen": 2.0,
                    "score_rejected": 1.0}  # fmt: skip
    assert bench.read_record(line, "line 1", 0, None) == PromptScores("answerable-1", "answerable", (2.0,), (1.0,))


# --- the registry's edges ----------------------------------------------------------------------------------------

REPLACED = """
    import dataclasses
    from rmbench_client.benchmarks.pairwise import BENCHMARK as PAIRWISE
    BENCHMARK = dataclasses.replace(PAIRWISE, {})
    def make():
        return BENCHMARK
"""
RAISES = 'raise ImportError("needs a package that is not installed")'
# case -> (the module's source, its entry point's name, words of the warning, names that are refused with it)
REFUSED = {
    "its import raises": (RAISES, "broken", "failed to load: ImportError: needs a package", ["broken"]),
    "a built-in's name": (REPLACED.format("title='an impostor'"), "pairwise", "'pairwise' is already registered", []),
    "another name": (
        REPLACED.format("name='own-pairs'"),
        "my-pairs",
        "its entry point is named 'my-pairs' but its benchmark 'own-pairs'",
        ["my-pairs", "own-pairs"],  # either name says why
    ),
    "no Summary": (REPLACED.format("name='odd', summary_type=list"), "odd", "summary_type <class 'list'>", ["odd"]),
    "no Benchmark": ("BENCHMARK = {'name': 'plain'}", "plain", "is a dict, not a", ["plain"]),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_plugin_that_cannot_be_used_is_left_out_with_a_warning(
    case: str, tmp_path: Path, on_path: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    source, entry, words, refused = REFUSED[case]
    on_path(package(tmp_path, "misfit", source, entry, "misfit:BENCHMARK"))
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        names = registry.names()
    (warning,) = [r.getMessage() for r in caplog.records if r.name == registry.__name__]
    assert warning.startswith(f"plug-in {entry} (misfit:BENCHMARK in misfit 0.1)") and words in warning, warning
    assert names == tuple(b.name for b in registry.BUILT_IN)  # every built-in, none taken over
    assert registry.get("pairwise") is pairwise.BENCHMARK
    for name in refused:
        with pytest.raises(ConfigError) as err:
            registry.get(name)
        assert str(err.value) == warning
    if refused:  # a config naming it says why too
        with pytest.raises(ConfigError, match=re.escape(warning)):
            rmbench_client.load_config({"model": "baseline:longer", "benchmark": refused[0]})


@pytest.mark.parametrize("value", ["made:BENCHMARK", "made:make", "made"])
def test_an_entry_point_names_a_benchmark_a_function_or_a_module(
    value: str, tmp_path: Path, on_path: Callable[..., None]
) -> None:
    on_path(package(tmp_path, "made", REPLACED.format("name='made-pairs', title='made pairs'"), "made-pairs", value))
    assert registry.names()[-1] == "made-pairs" and registry.get("made-pairs").title == "made pairs"
    assert "and made pairs" in registry.titles()


def test_the_cli_asked_for_a_plugin_that_failed_says_why_in_one_error_line(site: Path, tmp_path: Path) -> None:
    env = with_path(site, package(tmp_path / "pkg", "broken", RAISES, "broken", "broken:BENCHMARK"))
    warning = "plug-in broken (broken:BENCHMARK in broken 0.1) failed to load: ImportError: needs a package that is "
    for command in (["run", "--benchmark", "broken", "--data", str(DATA)], ["suite", "--benchmarks", "broken"]):
        proc = cli(*command, "--model", "baseline:longer", "--out", str(tmp_path / "out"), env=env)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert lines[0].startswith(warning) and lines[1].startswith("error: ") and lines[1].endswith(lines[0])
    assert run(env, tmp_path / "beside")["scored"] == 12  # the other benchmarks work beside it
