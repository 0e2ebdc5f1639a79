"""Running the `rmbench-client` command in tests: configs, runs in the background, waiting, reading results."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

CLI = str(Path(sys.executable).with_name("rmbench-client"))
RUN_TIMEOUT = 300
# The tiny reward model's own template, rendered by the client: a prompt's six sequences go out in one request.
TINY_REWARD_TEMPLATE = Path(__file__).resolve().parents[1] / "models" / "tiny" / "reward" / "tokenizer_config.json"


def write_config(path: Path, endpoints: list[str], **extra) -> Path:
    """A config of the tiny reward model on these endpoints, its template rendered by the client."""
    cfg = {
        "benchmark": "rm-bench",
        "model": "tiny-reward",
        "roles": {"reward": {"served_model": "tiny-reward", "endpoints": endpoints}},
        "reward": {"template": str(TINY_REWARD_TEMPLATE)},
        **extra,
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


def cli(
    *args: str, env: dict | None = None, timeout: float = RUN_TIMEOUT, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def start_run(config: Path, data: Path, out: Path, *extra: str) -> subprocess.Popen:
    args = [CLI, "run", "--config", str(config), "--data", str(data), "--out", str(out), "--no-progress", *extra]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_lines(out: Path, n: int, proc: subprocess.Popen, timeout: float = RUN_TIMEOUT) -> None:
    """Until the run's progress.jsonl holds n lines (prompts done), while the run is alive."""
    deadline = time.monotonic() + timeout
    path = out / "progress.jsonl"
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        assert proc.poll() is None, f"run ended early: {proc.communicate()[1][-1500:]}"
        time.sleep(0.05)
    raise AssertionError(f"{n} prompts not scored within {timeout}s")


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def sample_lines(out: Path, keep_answerers: bool = False) -> list[dict]:
    """The run's samples.jsonl, each line without `answered_by` (which endpoint answered: two equal runs on a
    role's several endpoints differ there) unless asked."""
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    return lines if keep_answerers else [{k: v for k, v in line.items() if k != "answered_by"} for line in lines]


def scores_only(s: dict) -> tuple:
    return s["domains"], s["overall"], s["failed"]


def stored(out: Path) -> int:
    with sqlite3.connect(out / "scores.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])


def one_error_line(proc: subprocess.CompletedProcess, code: int, *words: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def rescored(out: Path) -> dict:
    """The run's samples.jsonl re-scored through `rmbench-client score --json`."""
    proc = cli("score", str(out / "samples.jsonl"), "--json")
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))
