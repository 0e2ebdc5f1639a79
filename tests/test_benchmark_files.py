"""A benchmark defined in a YAML file, named by its path wherever a benchmark's name goes: `run`, `score`, `compare`,
`report`, `suite` (and a config's `benchmarks:`), `watch`, the Python API, `--workers`. Its numbers are held against the
kinds' rules computed here from the data (a baseline needs no server); a file with a mistake is one error line
naming the file and the key (or the data's record), exit 2."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers_cli import cli, one_error_line, rescored, sample_lines, summary

import rmbench_client as rmb
from rmbench_client.benchmarks import registry
from rmbench_client.errors import ConfigError


@pytest.fixture(autouse=True)
def _files_defined_here_stay_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmarks these tests define from files are known in this process only until the test ends: the other
    tests a worker runs after them see the built-ins alone."""
    monkeypatch.setattr(registry, "_defined", {})


def write_bon(root: Path, n: int = 24) -> tuple[Path, list[dict]]:
    """A best-of-N file of its own names (question, good, others, level) and its definition beside it."""
    rng = random.Random(5)
    records = [{"qid": f"q{i}", "question": f"Question {i}?", "good": "g" * rng.randint(1, 9),
                "others": ["r" * rng.randint(1, 9) for _ in range(rng.randint(1, 4))], "level": ("easy", "hard")[i % 2]}
               for i in range(n)]  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    (root / "bon.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    definition = {"name": "my-bon", "title": "My best-of-N set", "family": "best-of-n", "data": "bon.jsonl",
                  "fields": {"id": "qid", "prompt": "question", "chosen": "good", "rejected": "others",
                             "group": "level"}, "groups": ["easy", "hard"], "headline": "prompts"}  # fmt: skip
    (root / "bon.yaml").write_text(yaml.safe_dump(definition))
    return root / "bon.yaml", records


def write_ranking(root: Path, n: int = 16) -> tuple[Path, list[dict]]:
    rng = random.Random(6)
    records = []
    for i in range(n):
        k = rng.randint(2, 5)
        records.append({"prompt": f"P{i}", "responses": ["x" * rng.randint(1, 20) for _ in range(k)],
                        "ratings": [rng.randint(1, 3) for _ in range(k)], "group": "ab"[i % 2]})  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    (root / "rank.json").write_text(json.dumps(records))
    (root / "rank.yaml").write_text("name: my-rank\nfamily: ranking\n")
    return root / "rank.yaml", records


def test_a_best_of_n_file_runs_scores_and_compares_like_a_built_in(tmp_path: Path) -> None:
    definition, records = write_bon(tmp_path / "def")
    out, other = tmp_path / "longer", tmp_path / "random"
    for model, run in (("baseline:longer", out), ("baseline:random", other)):
        proc = cli("run", "--model", model, "--benchmark", str(definition), "--out", str(run), "--no-progress")
        assert proc.returncode == 0, proc.stderr
    s = summary(out)
    # the kind's rule on the data: the longest answer wins only when strictly longer than every other (baseline:longer)
    for level in ("easy", "hard"):
        mine = [r for r in records if r["level"] == level]
        right = [len(r["good"]) > max(map(len, r["others"])) for r in mine]
        ranks = [1 + sum(len(o) >= len(r["good"]) for o in r["others"]) for r in mine]
        assert s["groups"][level]["accuracy"] == pytest.approx(sum(right) / len(mine))
        assert s["groups"][level]["mrr"] == pytest.approx(sum(1 / k for k in ranks) / len(mine))
    assert (
        s["benchmark"] == "my-bon"
        and s["complete"]
        and (out / "benchmark.yaml").read_bytes() == definition.read_bytes()
    )
    # found again by its run directory's copy: score, compare, report, status
    assert rescored(out)["overall"] == s["overall"]
    status = cli("status", str(out), "--json")
    assert json.loads(status.stdout)["benchmark"] == "my-bon" and json.loads(status.stdout)["complete"], status.stderr
    moved = tmp_path / "elsewhere.jsonl"
    shutil.copy(out / "samples.jsonl", moved)
    one_error_line(cli("score", str(moved)), 2, "unknown benchmark 'my-bon'", "--benchmark FILE.yaml")
    again = cli("score", str(moved), "--benchmark", str(definition), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["overall"] == s["overall"], again.stderr
    compared = cli("compare", str(out), str(other), "--format", "csv")
    assert compared.returncode == 0 and "macro mrr" in compared.stdout and "accuracy" in compared.stdout, (
        compared.stderr
    )
    page = cli("report", str(out), str(other), "--out", str(tmp_path / "page.html"))
    assert page.returncode == 0 and (tmp_path / "page.html").stat().st_size > 0, page.stderr
    # the Python API: the file as the benchmark, the typed result
    result = rmb.evaluate({"model": "baseline:longer"}, benchmark=str(definition), out=tmp_path / "api")
    assert result.benchmark == "my-bon" and result.headline_name == "accuracy"
    assert result.headline.value == pytest.approx(s["overall"]["accuracy"])
    assert rmb.rescore(moved, benchmark=definition).benchmark == "my-bon"
    # the same records as parquet
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "bon.parquet")
    from_parquet = rmb.evaluate({"model": "baseline:longer"}, benchmark=str(definition),
                                data=tmp_path / "bon.parquet", out=tmp_path / "pq")  # fmt: skip
    assert from_parquet.summary["overall"] == s["overall"] and from_parquet.scored == len(records)


@pytest.mark.parametrize("page", ["README.md", "docs/benchmarks.md"])
def test_the_documented_file_defines_a_benchmark_that_runs(tmp_path: Path, page: str) -> None:
    """The page's example file, as written, over records of the field names it maps."""
    text = (Path(__file__).parent.parent / page).read_text()
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "family: best-of-n" in b]
    (tmp_path / "my-bon.yaml").write_text(block)
    records = [{"question": f"Q{i}?", "chosen": "c" * (i % 4 + 1), "others": ["r", "rr"],
                "level": ("easy", "hard")[i % 2]} for i in range(8)]  # fmt: skip
    (tmp_path / "my-bon.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = rmb.evaluate({"model": "baseline:longer"}, benchmark=str(tmp_path / "my-bon.yaml"), out=tmp_path / "run")
    assert result.benchmark == "my-bon" and result.complete and result.summary["n"] == {"easy": 4, "hard": 4}
    right = sum(len(r["chosen"]) > 2 for r in records) / len(records)  # the chosen above both rejected, a tie wrong
    assert result.headline.value == pytest.approx(right)  # `headline: prompts`: every prompt weighs the same


def test_a_ranking_file_scores_alike_in_one_process_and_in_workers(tmp_path: Path) -> None:
    definition, records = write_ranking(tmp_path / "def")
    data = definition.parent / "rank.json"
    runs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        proc = cli("run", "--model", "baseline:longer", "--benchmark", str(definition), "--data", str(data), "--out",
                   str(out), "--workers", workers, "--no-progress")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        runs.append(out)
    assert sample_lines(runs[0]) == sample_lines(runs[1])
    s = summary(runs[0])
    right = pairs = 0
    for r in records:
        for i, a in enumerate(r["ratings"]):
            for j, b in enumerate(r["ratings"]):
                if a > b:
                    pairs += 1
                    right += len(r["responses"][i]) > len(r["responses"][j])
    assert s["overall"]["accuracy"] == pytest.approx(right / pairs) and s["pairs"] == {
        "a": s["pairs"]["a"],
        "b": pairs - s["pairs"]["a"],
    }
    assert rmb.load_result(runs[0]).headline_name == "macro"  # the default headline: the groups' mean


def test_a_pairs_file_scores_as_pairwise_does(tmp_path: Path) -> None:
    """The pairs family on data of its own field names: the figures `pairwise` gives on the same pairs."""
    rng = random.Random(7)
    records = [{"q": f"Q{i}?", "good": "g" * rng.randint(1, 6), "bad": "b" * rng.randint(1, 6), "topic": "xy"[i % 2]}
               for i in range(20)]  # fmt: skip
    (tmp_path / "mine.json").write_text(json.dumps(records))
    (tmp_path / "mine.yaml").write_text("name: my-pairs\nfamily: pairs\ndata: mine.json\n"
                                        "fields: {prompt: q, chosen: good, rejected: bad, group: topic}\n")  # fmt: skip
    plain = [{"prompt": r["q"], "chosen": r["good"], "rejected": r["bad"], "subset": r["topic"]} for r in records]
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    mine = rmb.evaluate({"model": "baseline:longer"}, benchmark=str(tmp_path / "mine.yaml"), out=tmp_path / "a")
    theirs = rmb.evaluate({"model": "baseline:longer"}, benchmark="pairwise", data=tmp_path / "plain.json",
                          out=tmp_path / "b")  # fmt: skip
    same = ("subsets", "n", "accuracy", "macro_accuracy", "ci", "style_bias")
    assert [mine.summary[k] for k in same] == [theirs.summary[k] for k in same]
    for topic in "xy":  # a tie is wrong
        pairs = [r for r in records if r["topic"] == topic]
        right = sum(len(r["good"]) > len(r["bad"]) for r in pairs) / len(pairs)
        assert mine.summary["subsets"][topic] == pytest.approx(right)


def test_suite_runs_files_named_on_the_command_line_and_in_a_config(tmp_path: Path) -> None:
    bon, _ = write_bon(tmp_path / "def")
    rank, _ = write_ranking(tmp_path / "def")
    (tmp_path / "root").mkdir()
    proc = cli("suite", "--model", "baseline:longer", "--data", str(tmp_path / "root"), "--out", str(tmp_path / "s1"),
               "--benchmarks", f"{bon},{rank}", "--no-progress")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = (tmp_path / "s1" / "suite.md").read_text()
    assert "my-bon" in table and "my-rank" in table and "missing" in table  # my-rank's data is not where it says
    config = tmp_path / "eval.yaml"
    config.write_text(yaml.safe_dump({"model": "baseline:longer", "benchmarks": [str(bon)]}))
    proc = cli("suite", "--config", str(config), "--data", str(tmp_path / "root"), "--out", str(tmp_path / "s2"),
               "--no-progress", "--json")  # fmt: skip
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"]["my-bon"]["status"] == "complete", proc.stderr


def test_suite_and_watch_need_no_data_root_for_files_naming_their_data(tmp_path: Path) -> None:
    """A benchmark file's own `data:` is all a suite or a watch of it needs: no data/ folder beside it."""
    bon, _ = write_bon(tmp_path / "def")
    proc = cli("suite", "--model", "baseline:longer", "--benchmarks", str(bon), "--out", "s", "--no-progress",
               "--json", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"]["my-bon"]["status"] == "complete", proc.stderr
    checkpoint = tmp_path / "train" / "checkpoint-100"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text("{}")  # a whole checkpoint: its config and a whole (empty) safetensors
    (checkpoint / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    rows = rmb.watch(tmp_path / "train", {"model": "baseline:longer"}, out=tmp_path / "w", benchmarks=[str(bon)],
                     data_root=tmp_path / "absent", settle=0, once=True)  # fmt: skip
    assert [r.checkpoint for r in rows] == ["checkpoint-100"] and rows[0].done
    assert rows[0].results["my-bon"].headline == rmb.load_result(tmp_path / "s" / "my-bon").headline
    with pytest.raises(rmb.DataError, match="absent: no such directory"):  # one without its own data needs the root
        rmb.watch(tmp_path / "train", {"model": "baseline:longer"}, out=tmp_path / "w2", benchmarks=["rm-bench"],
                  data_root=tmp_path / "absent", once=True)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: x\nfamily: bestofn\n", ("bad.yaml: family: unknown kind 'bestofn'", "best-of-n")),
        ("name: x\nfamly: pairs\n", ("bad.yaml: famly: unknown key",)),
        ("family: pairs\n", ("bad.yaml", "name")),
        ("name: X_1\nfamily: pairs\n", ("bad.yaml: name: 'X_1'",)),
        ("name: x\nfamily: pairs\nfields: {responses: r}\n", ("bad.yaml: fields.responses: no field of the pairs",)),
        ("name: rm-bench\nfamily: pairs\n", ("bad.yaml: name: 'rm-bench'", "already registered")),
        ("name: x\nfamily: [pairs\n", ("bad.yaml: line 3 not valid YAML",)),
    ],
)
def test_a_file_with_a_mistake_is_one_error_naming_the_file_and_key(tmp_path: Path, text: str, words: tuple) -> None:
    (tmp_path / "bad.yaml").write_text(text)
    proc = cli("run", "--model", "baseline:longer", "--benchmark", "bad.yaml", "--data", "x.jsonl", cwd=tmp_path)
    one_error_line(proc, 2, *words)


def test_a_record_without_a_named_field_is_one_error_naming_the_record(tmp_path: Path) -> None:
    definition, records = write_bon(tmp_path / "def")
    del records[3]["others"]
    (definition.parent / "bon.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    proc = cli("run", "--model", "baseline:longer", "--benchmark", str(definition), "--out", str(tmp_path / "r"))
    one_error_line(proc, 2, "bon.jsonl: record 3", "others", "fields:")
    records[3]["others"], records[5]["level"] = ["x"], "medium"
    (definition.parent / "bon.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    proc = cli("run", "--model", "baseline:longer", "--benchmark", str(definition), "--out", str(tmp_path / "r"))
    one_error_line(proc, 2, "record 5", "'level' is 'medium'", "easy, hard")


def test_two_files_of_one_name_are_refused_unless_alike(tmp_path: Path) -> None:
    definition, _ = write_bon(tmp_path / "a")
    twin, other = tmp_path / "b" / "bon.yaml", tmp_path / "c" / "bon.yaml"
    for path, text in ((twin, definition.read_text()), (other, definition.read_text().replace("prompts", "groups"))):
        path.parent.mkdir()
        path.write_text(text)
    assert registry.get(str(definition)).name == registry.get(str(twin)).name == "my-bon"
    with pytest.raises(ConfigError, match="already defined differently"):
        registry.get(str(other))
