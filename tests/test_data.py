"""`rmbench-client data fetch|list` and the data/ folder: downloads end to end through huggingface_hub against a
stand-in for the hub on loopback (HF_ENDPOINT), serving files built at test time from ../shared/data and with the
hub datasets' schemas; known checksums; runs that read data/ when no data path is given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_data import REPO, RMBENCH_FILES, require_rmbench
from hub_schemas import (
    FILTERED_SCHEMA,
    PRIOR_SCHEMA,
    RB2_SCHEMA,
    filtered_record,
    hub_shard,
    prior_record,
    rb2_record,
    write_parquet,
)
from hub_standin import hub_env, serve_hub

from rmbench_client import constants as C
from rmbench_client.benchmarks import registry as benchmarks
from rmbench_client.benchmarks.prmbench import constants as prm_c
from rmbench_client.benchmarks.reward_bench import constants as rb_c
from rmbench_client.benchmarks.reward_bench_2 import constants as rb2_c
from rmbench_client.benchmarks.rm_bench import constants as rmbench_c
from rmbench_client.cli.data import inventory
from rmbench_client.datasets import hub, load_dataset

CLI = str(Path(sys.executable).with_name("rmbench-client"))
PRIOR_SPLITS = ("anthropic_helpful", "anthropic_hhh", "shp", "summarize")


def total_dataset(rmbench_dir: Path) -> bytes:
    """RM-Bench's total_dataset.json layout (string ids "chat/N", a domain field) from the four domain files."""
    records = []
    for name in RMBENCH_FILES:
        sub = name.removesuffix("_filtered.json")
        for rec in json.loads((rmbench_dir / name).read_text(encoding="utf-8")):
            records.append(
                {"id": f"{sub}/{rec['id']}", "prompt": rec["prompt"], "chosen": rec["chosen"]}
                | {"rejected": rec["rejected"], "domain": sub}
            )
    return json.dumps(records, indent=4).encode()


@pytest.fixture(scope="module")
def hub_repos(tmp_path_factory) -> dict[str, dict[str, bytes]]:
    """The four benchmarks' hub repositories, as files: parquet shards under data/, plus files never fetched."""
    build = tmp_path_factory.mktemp("hub")

    def parquet(records: list, schema, split: str) -> bytes:
        return write_parquet(hub_shard(build / split, split), records, schema).read_bytes()

    filtered = [filtered_record(i, s, "a longer answer", "short") for i, s in enumerate(("hep-go", "donotanswer"))]
    rb2 = [rb2_record("0", "Math", ["long answer"], ["a", "b", "c"]), rb2_record("ref:1", "Ties", ["x"], ["y"])]
    readme = b"---\nlicense: odc-by\n---\n"
    return {
        rmbench_c.HUB_REPO: {"total_dataset.json": total_dataset(require_rmbench()), "README.md": readme},
        rb_c.HUB_REPO: {
            "data/filtered-00000-of-00001.parquet": parquet(filtered, FILTERED_SCHEMA, "filtered"),
            "data/raw-00000-of-00001.parquet": parquet(filtered, FILTERED_SCHEMA, "raw"),
            "README.md": readme,
        },
        rb_c.PRIOR_HUB_REPO: {
            f"data/{split}-00000-of-00001.parquet": parquet(
                [prior_record(0, ["q"], "good", "bad")], PRIOR_SCHEMA, split
            )
            for split in (*PRIOR_SPLITS, "pku_better")
        },
        rb2_c.HUB_REPO: {"data/test-00000-of-00001.parquet": parquet(rb2, RB2_SCHEMA, "test")},
    }


def cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


@pytest.mark.slow
def test_fetch_and_list_through_a_local_hub(tmp_path, hub_repos):
    with serve_hub(hub_repos) as fake:
        env = hub_env(tmp_path, fake.url)
        proc = cli(["data", "fetch", "reward-bench", "reward-bench-2"], env, tmp_path)
        assert proc.returncode == 0, proc.stderr
    rb = tmp_path / "data" / "reward-bench"
    assert sorted(p.name for p in rb.iterdir()) == sorted(
        ["filtered-00000-of-00001.parquet"] + [f"{s}-00000-of-00001.parquet" for s in PRIOR_SPLITS]
    )  # flat, only the filtered split and the four prior sets (no raw, no pku_*), no staging left behind
    assert (rb / "filtered-00000-of-00001.parquet").read_bytes() == hub_repos[rb_c.HUB_REPO][
        "data/filtered-00000-of-00001.parquet"
    ]
    assert "reward-bench: 6 prompts" in proc.stdout and "reward-bench-2: 2 prompts" in proc.stdout
    assert "no known checksum" in proc.stdout
    assert ("GET", "/api/datasets/allenai/reward-bench-2/revision/main") in fake.requests

    listing = json.loads(cli(["data", "list", "--json"], env, tmp_path).stdout)
    by_name = {e["benchmark"]: e for e in listing}
    assert by_name["reward-bench"]["prompts"] == 6 and by_name["reward-bench-2"]["prompts"] == 2
    assert by_name["reward-bench-2"]["missing_groups"] == ["Factuality", "Precise IF", "Safety", "Focus"]
    assert not by_name["rm-bench"]["present"] and not by_name["pairwise"]["present"]
    text = cli(["data", "list"], env, tmp_path).stdout
    assert "rm-bench: not in data/rm-bench (rmbench-client data fetch rm-bench)" in text

    # a run without --data and without RMBENCH_DATA_DIR reads data/ (the hub here is a closed port)
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    proc = cli(
        ["run", "--model", "baseline:longer", "--benchmark", "reward-bench-2", "--json", "--out", "r"], env, tmp_path
    )
    summary = json.loads(proc.stdout)
    assert summary["scored"] == 2 and summary["subsets"]["Math"] == 1.0, proc.stderr


def test_a_file_that_fails_its_known_checksum_is_not_kept(tmp_path, hub_repos):
    """The stand-in's total_dataset.json is rebuilt from the domain files, so it is not the file whose git blob id
    data/README.md lists: the fetch stops with one error line and leaves nothing behind."""
    with serve_hub(hub_repos) as fake:
        proc = cli(["data", "fetch", "rm-bench"], hub_env(tmp_path, fake.url), tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("error: ") and "total_dataset.json" in error and "git-sha1" in error
    assert rmbench_c.CHECKSUMS["total_dataset.json"].split(":")[1] in error
    assert not (tmp_path / "data").exists()  # not even the folders the fetch made


def test_a_file_that_matches_its_checksum_is_kept(tmp_path, hub_repos):
    """The same download with the served file's own git blob id (from `git hash-object`) as the known one."""
    served = tmp_path / "served.json"
    served.write_bytes(hub_repos[rmbench_c.HUB_REPO]["total_dataset.json"])
    blob = subprocess.run(["git", "hash-object", str(served)], capture_output=True, text=True, check=True).stdout
    driver = (
        "import sys; from rmbench_client.benchmarks.rm_bench import constants as K; "
        f"K.CHECKSUMS['total_dataset.json'] = 'git-sha1:{blob.strip()}'; "
        "from rmbench_client.cli import main; sys.exit(main(['data', 'fetch', 'rm-bench']))"
    )
    with serve_hub(hub_repos) as fake:
        proc = subprocess.run(
            [sys.executable, "-c", driver],
            capture_output=True,
            text=True,
            env=hub_env(tmp_path, fake.url),
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr
    assert "total_dataset.json  checksum ok" in proc.stdout and "rm-bench: 798 prompts" in proc.stdout
    assert (tmp_path / "data" / "rm-bench" / "total_dataset.json").read_bytes() == served.read_bytes()


def test_fetch_unreachable_hub_and_own_data_are_one_line(tmp_path):
    env = hub_env(tmp_path, "http://127.0.0.1:9")
    cases = ((["reward-bench-2"], "allenai/reward-bench-2"), (["pairwise"], "nothing to fetch"), (["rmb"], "nothing"))
    for args, detail in cases:
        proc = cli(["data", "fetch", *args], env, tmp_path)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and lines[-1].startswith("error: ") and detail in lines[-1], proc.stderr


def test_known_checksums_are_the_shared_files(tmp_path):
    d = require_rmbench()
    sums = dict(line.split()[::-1] for line in (d / "SHA256SUMS").read_text().splitlines() if line.strip())
    for name in RMBENCH_FILES:
        assert rmbench_c.CHECKSUMS[name] == f"sha256:{sums[name]}"
        assert hub.checksum(d / name, "sha256") == sums[name]
    blob = subprocess.run(["git", "hash-object", str(d / RMBENCH_FILES[0])], capture_output=True, text=True, check=True)
    assert hub.checksum(d / RMBENCH_FILES[0], "git-sha1") == blob.stdout.strip()


def test_runs_read_data_folder_when_no_path_is_given(tmp_path, monkeypatch):
    folder = tmp_path / C.DATA_FOLDER / "rm-bench"
    folder.mkdir(parents=True)
    for name in RMBENCH_FILES:  # linked, not copied
        (folder / name).symlink_to(require_rmbench() / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(rmbench_c.DATA_ENV, raising=False)
    data = load_dataset("rm-bench", None)
    assert len(data.examples) == 798 and data.sources[0].parent == Path(C.DATA_FOLDER) / "rm-bench"
    entry = next(e for e in inventory() if e["benchmark"] == "rm-bench")
    assert entry["files"] == dict.fromkeys(RMBENCH_FILES, "ok") and entry["prompts"] == 798
    assert entry["missing_groups"] == ["math"]


def test_make_data_runs_data_fetch():
    proc = subprocess.run(["make", "-n", "data"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and "rmbench-client data fetch" in proc.stdout


def test_data_readme_lists_every_benchmark_and_known_checksum():
    readme = (REPO / "data" / "README.md").read_text(encoding="utf-8")
    for name in benchmarks.names():  # every registered benchmark, the ones added later too
        assert f"`{name}`" in readme
    for expected in (*rmbench_c.CHECKSUMS.values(), *prm_c.CHECKSUMS.values()):
        assert expected.split(":")[1] in readme
    ignored = subprocess.run(["git", "check-ignore", "data/rm-bench/total_dataset.json"], cwd=REPO, capture_output=True)
    assert ignored.returncode == 0  # downloads stay out of git
    assert subprocess.run(["git", "check-ignore", "data/README.md"], cwd=REPO, capture_output=True).returncode == 1


def test_a_run_without_local_data_downloads_every_part(tmp_path, hub_repos):
    """No --data, no RMBENCH_DATA_DIR, no data/: the filtered split and the prior sets come through the hub cache."""
    with serve_hub(hub_repos) as fake:
        env = hub_env(tmp_path, fake.url) | {"RMBENCH_CACHE_DIR": str(tmp_path / "cache")}
        args = ["run", "--model", "baseline:longer", "--benchmark", "reward-bench", "--json", "--out", "r"]
        proc = cli(args, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["scored"] == 6 and set(summary["subsets"]) == {"hep-go", "donotanswer", *PRIOR_SPLITS}
    assert not (tmp_path / C.DATA_FOLDER).exists()  # the cache, not data/
