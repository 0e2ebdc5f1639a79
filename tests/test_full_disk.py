"""A full disk and directories that cannot be written, on a small tmpfs mounted for the test (as CI runs, as root;
skipped with the reason where mounting is refused), against the loopback stand-in for vLLM (fake_reward_faults.py).

The disk fills while a run scores: the run ends with one error line that names the run directory and SQLite's own
"database or disk is full" (the first cause), then that the outputs could not be written either; the earlier
complete run's outputs stay byte for byte (nothing of them is removed at start), and once there is space again the
same command resumes and replaces them. A `--out` that cannot be created, and a read-only run directory, are one
error line each; a run directory on a read-only file system can still be looked at (`run --dry-run`, `status`)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_reward_faults import FakeVllm
from helpers_cli import cli, one_error_line, stored, summary
from test_run_endings import PROMPTS, config, snapshot

pytestmark = pytest.mark.timeout(120)
FILL_AT = 2 + 2 * 3  # the fingerprint's two requests, then three prompts' worth: the disk fills then


@contextlib.contextmanager
def small_disk(where: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` for the block."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def fill(disk: Path) -> Path:
    """Every byte of the disk taken by one file (removed to free it again)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as exc:
        assert exc.errno == 28  # ENOSPC
    finally:
        os.close(fd)
    return filler


@dataclass
class FillingFake(FakeVllm):
    """The stand-in, which fills the run's disk just before it answers its FILL_AT-th /pooling request."""

    disk: Path | None = None

    def answer(self, path: str, body: dict[str, Any]) -> Any:
        if path == "/pooling" and self.counts[path] == FILL_AT and self.disk is not None:
            fill(self.disk)
        return super().answer(path, body)


def concurrency_one(disk: Path, url: str) -> Path:
    """The run's config, one request at a time: every prompt stored is stored before the next request goes out."""
    roles = {"reward": {"served_model": "fake-reward", "endpoints": [url], "concurrency": 1}}
    return config(disk, url, roles=roles)


@pytest.mark.slow
@pytest.mark.parametrize("stays_full", [False, True], ids=["space-back-when-the-store-closes", "stays-full"])
def test_a_disk_full_while_scoring_names_sqlites_error_and_never_loses_a_result(tmp_path, stays_full):
    """Closing the store frees its write-ahead log: the new partial result then fits and replaces the earlier one,
    saying why it stopped. When the disk stays full (a reader holds the store open, so the log stays), the outputs
    cannot be written either: the earlier result stays whole, with the later run's progress beside it."""
    with small_disk(tmp_path / "disk") as disk:
        with FakeVllm() as fake:
            first = cli("run", "--config", str(config(disk, fake.url)), "--no-progress")
        assert first.returncode == 0, first.stderr
        out = disk / "run"
        before = snapshot(out)
        assert {"summary.json", "samples.jsonl", "failures.jsonl"} <= set(before)

        with contextlib.ExitStack() as stack:
            if stays_full:
                reader = stack.enter_context(contextlib.closing(sqlite3.connect(out / "scores.sqlite")))
                reader.execute("SELECT COUNT(*) FROM scores").fetchone()
            fake = stack.enter_context(FillingFake(width=2, disk=disk))  # another head: another model, scored afresh
            proc = cli("run", "--config", str(concurrency_one(disk, fake.url)), "--no-progress")
        line = one_error_line(proc, 1, f"run directory {out}: scores.sqlite: database or disk is full")
        assert "(0 bytes free on its file system)" in line
        after = snapshot(out)
        assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
        if stays_full:
            assert "the outputs could not be written either" in line and "No space left on device" in line, line
            assert "keeps the earlier run's outputs" in line
            for name in ("summary.json", "samples.jsonl", "failures.jsonl"):
                assert after[name] == before[name], name  # the earlier result, whole
            kept = len(after["progress.jsonl"].splitlines())  # the prompts stored before the disk filled
            shown = json.loads(cli("status", str(out), "--json").stdout)
            assert "a later run ended without writing its outputs" in shown["ended"] and shown["scored"] == kept
        else:
            s = summary(out)  # the new partial result, with the first cause as its reason
            kept = s["scored"]
            assert s["complete"] is False and "database or disk is full" in s["aborted"]
            assert len(after["samples.jsonl"].splitlines()) == kept and "progress.jsonl" not in after
        assert 1 <= kept < PROMPTS and stored(out) == 2 * PROMPTS + 2 * kept  # each stored prompt whole

        (disk / "filler").unlink()  # space again: the same command resumes, and replaces the outputs
        with FakeVllm(width=2) as fake:
            again = cli("run", "--config", str(concurrency_one(disk, fake.url)), "--no-progress")
            resent = fake.counts["/pooling"] - fake.probes  # identity checks' fingerprints apart
        assert again.returncode == 0, again.stderr
        assert resent == 2 * (PROMPTS - kept)  # only the prompts not stored
        s = summary(out)
        assert s["complete"] and s["identity"] != json.loads(before["summary.json"])["identity"]
        assert stored(out) == 4 * PROMPTS and not (out / "progress.jsonl").exists()


@pytest.mark.slow
def test_a_full_disk_at_start_changes_nothing(tmp_path):  # SQLite's own files aside
    with small_disk(tmp_path / "disk") as disk:
        with FakeVllm() as fake:
            path = config(disk, fake.url)
            assert cli("run", "--config", str(path), "--no-progress").returncode == 0
            before = snapshot(disk / "run")
            fill(disk)
            proc = cli("run", "--config", str(path), "--no-progress", "--fresh")
            plain = cli("run", "--config", str(path), "--no-progress")
        # the config, written in full before the run begins, is where the full disk shows: nothing is changed,
        # --fresh's store kept; without --fresh the store cannot be opened, before anything is changed too
        one_error_line(proc, 1, f"run directory {disk / 'run'}: writing config.yaml: No space left on device (0 bytes")
        one_error_line(plain, 1, f"run directory {disk / 'run'}: scores.sqlite: ", "(0 bytes free on its file system)")
        after = snapshot(disk / "run")
        assert {k: v for k, v in after.items() if not k.startswith("scores.sqlite-")} == before


@pytest.mark.parametrize("out", ["/dev/null/x", "/proc/x"])
def test_an_out_that_cannot_be_created_is_one_error_line(tmp_path, out):
    with FakeVllm() as fake:
        proc = cli("run", "--config", str(config(tmp_path, fake.url)), "--no-progress", "--out", out)
        assert fake.counts["/pooling"] == 0  # refused before any server is asked
    one_error_line(proc, 2, f"run directory {out} cannot be created: ")


@pytest.mark.slow
@pytest.mark.parametrize("out", ["/dev/null/x", "/proc/x"])
def test_a_suite_report_or_chart_out_that_cannot_be_created_is_one_error_line(tmp_path, out):
    data = tmp_path / "pairwise"
    data.mkdir()
    (data / "p.jsonl").write_text(json.dumps({"prompt": "q", "chosen": "a longer answer", "rejected": "b"}) + "\n")
    proc = cli("suite", "--model", "baseline:longer", "--data", str(tmp_path), "--out", out, "--no-progress")
    one_error_line(proc, 2, f"suite directory {out} cannot be created: ")
    run = tmp_path / "run"
    made = cli("run", "--model", "baseline:longer", "--benchmark", "pairwise", "--data", str(data), "--out", str(run))
    assert made.returncode == 0, made.stderr
    proc = cli("report", str(run), "--out", f"{out}/page.html")
    one_error_line(proc, 2, f"the page's directory {out} cannot be created: ")
    proc = cli("compare", str(run), str(run), "--chart", f"{out}/chart.png")
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith(
        f"error: the chart's directory {out} cannot be created: "), proc.stderr  # fmt: skip
    assert "Traceback" not in proc.stderr


def test_a_read_only_run_directory_is_one_error_line(tmp_path):
    with small_disk(tmp_path / "disk") as disk:
        with FakeVllm() as fake:
            assert cli("run", "--config", str(config(disk, fake.url)), "--no-progress").returncode == 0
            before = snapshot(disk / "run")
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
            proc = cli("run", "--config", str(config(tmp_path, fake.url)), "--no-progress", "--out", str(disk / "run"))
        one_error_line(proc, 2, f"run directory {disk / 'run'} cannot be written: Read-only file system")
        assert snapshot(disk / "run") == before


def test_a_run_directory_on_a_read_only_file_system_can_be_looked_at(tmp_path):
    """`run --dry-run` reads the store of a run directory on a read-only file system (closed cleanly: no log beside
    it, so read as it is), `status` says where it stands (its lock probed through a descriptor opened to read), and
    neither writes anything."""
    with small_disk(tmp_path / "disk") as disk:
        with FakeVllm() as fake:
            cfg = config(disk, fake.url)
            assert cli("run", "--config", str(cfg), "--no-progress").returncode == 0
            before = snapshot(disk / "run")
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
            dry = cli("run", "--config", str(cfg), "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert (plan["stored_prompts"], plan["to_send"]) == (PROMPTS, 0), plan
        shown = cli("status", str(disk / "run"), "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout) | {"run_dir": ""} == {
            "run_dir": "", "model": "fake", "benchmark": "pairwise", "type": "reward", "state": "not running",
            "scored": PROMPTS, "failed": 0, "prompts": PROMPTS, "complete": True, "partial": []}  # fmt: skip
        assert snapshot(disk / "run") == before
