"""Every benchmark's outputs byte for byte as an earlier version wrote them: the files of a baseline suite over
every benchmark's data (summaries, per-sample lines, each benchmark's own files, suite tables), `score`'s terminal
tables and JSON, `compare` in its three formats and the report page.

A refactor must not change a number, a file or a message. The recorded digests (tests/golden/outputs.json) were
written by the code before the package was reorganised around one folder per benchmark; `RMBENCH_WRITE_GOLDEN=1`
records them again, which is only right when an output is meant to change (say so in the commit). Paths are compared
as <TMP> and <SHARED>: the digests were recorded again so when the shared data's path was found to be in them, from
outputs byte for byte equal to the earlier version's on the machine that recorded them.

Every result carries a stamp (results/stamp.py): its environment (the client's version, the Python, the libraries'
versions) and the time it was written are the machine's and the moment's, not the code's outputs, and are compared
as placeholders (`unstamped`); the rest of the stamp (the command, the config) byte for byte. The digests were
recorded again when stamps came, the outputs otherwise unchanged: only the files and pages that carry a stamp
differed from the earlier digests, and only by it."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import platform
import random
import re
from pathlib import Path

import pytest
from helpers_cli import cli
from helpers_data import rmbench_dir
from hub_schemas import (
    FILTERED_SCHEMA,
    PRIOR_SCHEMA,
    RB2_SCHEMA,
    filtered_record,
    prior_record,
    rb2_record,
    write_parquet,
)
from new_benchmarks_fixture import write_if, write_mrb, write_rewardmath
from ppe_fixture import battle, best_of_k, write_correctness, write_preference
from processbench_fixture import write_processbench
from test_judgebench import RECORDS as JUDGEBENCH_RECORDS
from test_judgebench import hub_split

GOLDEN = Path(__file__).parent / "golden" / "outputs.json"
SHARED = rmbench_dir().parent
MODELS = ("baseline:longer", "baseline:random")


def _data(root: Path) -> Path:
    """Every benchmark's data: the shared real files where there are some, hub-schema fixtures elsewhere."""
    root.mkdir()
    for name in ("rm-bench", "prmbench"):
        (root / name).symlink_to(SHARED / name)
    rmb = root / "rmb"
    for part in ("Pairwise_set", "BoN_set"):  # two scenarios of each set: enough for every table, and quick
        for scenario in ("Helpfulness/Chat/Discussion", "Harmlessness/S1"):
            (rmb / part / scenario).parent.mkdir(parents=True, exist_ok=True)
            (rmb / part / f"{scenario}.json").symlink_to(SHARED / "rmb" / part / f"{scenario}.json")
    hub_split(root / "judgebench", "gpt", JUDGEBENCH_RECORDS)
    (root / "pairwise").mkdir()
    pairs = [{"prompt": f"Question {i}?", "chosen": "A fuller, right answer." * (i % 3 + 1),
              "rejected": "Wrong." * (i % 2 + 1), "subset": ("math", "geo")[i % 2]} for i in range(12)]  # fmt: skip
    (root / "pairwise" / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    subsets = ("alpacaeval-easy", "mt-bench-hard", "donotanswer", "math-prm", "hep-python", "llmbar-natural")
    filtered = [filtered_record(i, subsets[i % len(subsets)], "A helpful answer." * (i % 4 + 1), "Bad." * (i % 3 + 1))
                for i in range(24)]  # fmt: skip
    write_parquet(root / "reward-bench" / "filtered-00000-of-00001.parquet", filtered, FILTERED_SCHEMA)
    prior = [prior_record(i, [f"Turn {i}"], "Kind and long answer." * (i % 2 + 1), "Rude.") for i in range(6)]
    write_parquet(root / "reward-bench" / "anthropic_helpful-00000-of-00001.parquet", prior, PRIOR_SCHEMA)
    answers = ["The right answer, stated plainly.", "A wrong answer.", "Another wrong one.", "Off topic entirely."]
    rb2 = [rb2_record(f"{i}", s, answers[: 1 + (s == "Ties")], answers[1 + (s == "Ties") :], prompt=f"Q {i}?")
           for i, s in enumerate(("Math", "Focus", "Factuality", "Safety", "Precise IF", "Math", "Focus"))]  # fmt: skip
    write_parquet(root / "reward-bench-2" / "test-00000-of-00001.parquet", rb2, RB2_SCHEMA)
    languages = ("English", "Chinese", "German")
    battles = [
        battle(f"b{i}", ("model_a", "model_b")[i % 2], "A fuller answer." * (i % 3 + 1), "Hm." * (i % 2 + 1),
               language=languages[i % 3], hard_prompt=bool(i % 2))
        for i in range(9)
    ]  # fmt: skip
    write_preference(root / "ppe-preference", battles)
    answers = ["x = 4, since 2x = 8.", "4", "x = 5", "no idea"]

    def row(name: str, i: int) -> dict:
        pairs = [[0, 2], [0, 3], *([[1, 2]] if i % 2 == 0 else [])]
        return best_of_k(name, i, answers, [True, i % 2 == 0, False, False], pairs)

    rows = {name: [row(name, i) for i in range(3)] for name in ("math", "gpqa")}
    write_correctness(root / "ppe-correctness", rows)
    write_processbench(root / "processbench", count=9)
    write_rewardmath(root / "rewardmath" / "RewardMATH_direct.json", problems=7)
    write_mrb(root / "m-reward-bench", ("arb_Arab", "eng_Latn", "zho_Hans"), per_subset=1)
    write_if(root / "if-reward-bench" / "if_rewardbench.json", instructions=9)
    return root


# a stamp's (and a suite cell's) values that are the environment's and the moment's, as JSON writes them indented
# or compact
STAMP_VALUES = re.compile(rb'"(version|python|written)": ?"[^"]*"')
STAMP_LIBRARIES = re.compile(rb'"libraries": ?\{[^{}]*\}')


def unstamped(data: bytes) -> bytes:
    """The output with its stamps' environment and time as placeholders (<version>, <python>, <written>,
    <libraries>)."""
    data = STAMP_VALUES.sub(lambda m: b'"' + m[1] + b'": "<' + m[1] + b'>"', data)
    return STAMP_LIBRARIES.sub(b'"libraries": "<libraries>"', data)


def _digest(path: Path, tmp: str) -> str:
    data = path.read_bytes()
    if path.suffix == ".html":  # the page's data is compressed: the paths in it are compared unpacked
        page = re.compile(rb'(id="data" data-encoding="gzip\+base64">)([^<]*)')
        data = page.sub(lambda m: m[1] + gzip.decompress(base64.b64decode(m[2])), data)
    data = unstamped(data)
    if path.suffix in (".json", ".jsonl", ".md", ".yaml", ".html", ".csv", ".txt"):
        data = data.replace(tmp.encode(), b"<TMP>")
        # a summary names its data files by their real paths: the shared data lies elsewhere on another machine
        for shared in {str(SHARED.resolve()), str(SHARED)}:
            data = data.replace(shared.encode(), b"<SHARED>")
    return hashlib.sha256(data).hexdigest()


def _outputs(tmp_path: Path) -> dict[str, str]:
    root = _data(tmp_path / "data")
    runs = tmp_path / "runs"
    tmp = str(tmp_path)
    out: dict[str, str] = {}
    env = os.environ | {"COLUMNS": "160", "RMBENCH_DATA_DIR": str(root / "rm-bench")}

    def record(name: str, *args: str) -> None:
        proc = cli(*args, env=env, cwd=tmp_path)  # paths relative to it: a table's title wraps alike every time
        text = unstamped(f"exit {proc.returncode}\n{proc.stdout}".encode()).decode().replace(tmp, "<TMP>")
        for shared in {str(SHARED.resolve()), str(SHARED)}:
            text = text.replace(shared, "<SHARED>")
        out[name] = hashlib.sha256(text.encode()).hexdigest()

    for model in MODELS:
        name = model.split(":")[1]
        record(f"suite {name}", "suite", "--model", model, "--data", str(root), "--out", str(runs / name),
               "--no-progress", "--json")  # fmt: skip
    for path in sorted(runs.rglob("*")):
        if path.is_file() and path.name not in (".lock", "scores.sqlite") and not path.name.startswith("scores.sqlite"):
            out[str(path.relative_to(runs))] = _digest(path, tmp)
    for bench in sorted(p.name for p in (runs / "random").iterdir() if p.is_dir()):
        samples = f"runs/random/{bench}/samples.jsonl"
        record(f"score {bench}", "score", samples)
        record(f"score --json {bench}", "score", samples, "--json")
    record("compare table", "compare", str(runs / "longer"), str(runs / "random"))
    for fmt in ("markdown", "csv"):
        for bench in ("rm-bench", "reward-bench", "pairwise", "rmb"):
            record(f"compare {fmt} {bench}", "compare", str(runs / "longer" / bench), str(runs / "random" / bench),
                   "--format", fmt)  # fmt: skip
    pages = tmp_path / "pages"
    record("report", "report", str(runs / "longer"), str(runs / "random"), "--out", str(pages))
    for bench in ("prmbench", "processbench", "ppe-correctness", "rewardmath", "m-reward-bench", "if-reward-bench"):
        record(f"report {bench}", "report", str(runs / "random" / bench), "--out", str(pages / f"{bench}.html"))
    for page in sorted(pages.iterdir()):
        out[f"pages/{page.name}"] = _digest(page, tmp)
    record("run rm-bench table", "run", "--model", "baseline:longer", "--data", str(root / "rm-bench"), "--out",
           str(tmp_path / "one"), "--no-progress")  # fmt: skip
    return out


@pytest.mark.slow
def test_every_output_is_what_the_earlier_version_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (SHARED / "prmbench").is_dir() or not (SHARED / "rmb").is_dir():
        pytest.skip(f"the shared data is not in {SHARED}; set RMBENCH_DATA_DIR to its rm-bench directory")
    if platform.machine() in ("x86_64", "AMD64"):
        # OpenBLAS picks its kernels by CPU, and their sums differ in the last bits: the RM-Bench page's paired
        # differences (not exact sums, unlike the summaries' numbers) came out otherwise on an AVX-512 machine
        # (SapphireRapids kernels) than where they were recorded. One kernel that every x86-64 of this kind runs.
        monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    got = _outputs(tmp_path)
    if os.environ.get("RMBENCH_WRITE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())
    differ = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
    assert not differ, f"outputs differ from the recorded ones: {differ}"


SHARED_GOLDEN = Path(__file__).parent / "golden" / "shared-scores.json"


def _prm_samples(path: Path) -> None:
    """PRMBench's records, each with seeded step scores, as samples.jsonl lines (the first record of a repeated id)."""
    from rmbench_client.benchmarks import registry

    bench, rng, seen = registry.get("prmbench"), random.Random(7), set()
    with path.open("w", encoding="utf-8") as out:
        for file in bench.files_in(SHARED / "prmbench"):
            for i, line in enumerate(file.read_text(encoding="utf-8").splitlines()):
                ex = bench.parse_record(json.loads(line), file, i)
                if ex is None or ex.id in seen:
                    continue
                seen.add(ex.id)
                scores = [round(rng.random(), 4) for _ in ex.steps]
                out.write(json.dumps({"benchmark": "prmbench", "id": ex.id, "classification": ex.group,
                                      "step_scores": scores, "step_labels": list(ex.step_labels)}) + "\n")  # fmt: skip


@pytest.mark.slow
def test_every_benchmark_scores_the_whole_shared_data_as_before(tmp_path: Path) -> None:
    """The numbers on all of the shared data (not the golden test's slices): baseline runs over RM-Bench, JudgeBench
    and RMB, the published IXC-2.5 scores re-scored, PRMBench's records with seeded step scores at two thresholds."""
    if not (SHARED / "prmbench").is_dir() or not (SHARED / "rmb").is_dir():
        pytest.skip(f"the shared data is not in {SHARED}; set RMBENCH_DATA_DIR to its rm-bench directory")
    got: dict[str, str] = {}
    for bench in ("rm-bench", "judgebench", "rmb"):
        for model in ("baseline:longer", "baseline:random", "baseline:markdown"):
            out = tmp_path / bench / model.split(":")[1]
            proc = cli("run", "--model", model, "--benchmark", bench, "--data", str(SHARED / bench), "--out",
                       str(out), "--no-progress", "--no-heatmaps")  # fmt: skip
            assert proc.returncode == 0, proc.stderr[-2000:]
            for path in sorted(out.rglob("*")):
                if path.is_file() and path.name != ".lock" and not path.name.startswith("scores.sqlite"):
                    got[f"{bench}/{model}/{path.relative_to(out)}"] = _digest(path, str(tmp_path))
    published = SHARED / "reference-results" / "ixc25-reward-rm-bench-scores.json"
    scored = {"ixc25": cli("score", str(published), "--json", "--domain", "chat")}
    _prm_samples(tmp_path / "prm.jsonl")
    for threshold in ("0.5", "0.3"):
        scored[f"prmbench@{threshold}"] = cli("score", str(tmp_path / "prm.jsonl"), "--json", "--threshold", threshold)
    for name, proc in scored.items():
        assert proc.returncode == 0, proc.stderr[-2000:]
        got[f"score {name}"] = hashlib.sha256(proc.stdout.encode()).hexdigest()
    if os.environ.get("RMBENCH_WRITE_GOLDEN"):
        SHARED_GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(SHARED_GOLDEN.read_text())
    differ = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
    assert not differ, f"outputs differ from the recorded ones: {differ}"
