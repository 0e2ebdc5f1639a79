"""A client run in a subprocess whose log lines are kept with the time each came: the fault benches (faults.py,
ray_faults.py) time a fault against what the client said (when it took an endpoint out) and when the run ended."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / ".venv" / "bin" / "rmbench-client"


class WatchedRun:
    """`rmbench-client -v run --config CFG --out OUT`, its stderr read line by line as it comes."""

    def __init__(self, cfg: Path, out: Path) -> None:
        self.out = out
        self.started = time.monotonic()
        args = [str(CLIENT), "-v", "run", "--config", str(cfg), "--out", str(out), "--no-progress"]
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=ROOT)
        self.lines: list[tuple[float, str]] = []  # (monotonic time, line)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line))

    def wait_scored(self, prompts: int) -> None:
        """Until `prompts` prompts are scored (progress.jsonl, written while the run scores)."""
        progress = self.out / "progress.jsonl"
        while not (progress.exists() and len(progress.read_text().splitlines()) >= prompts):
            if self.proc.poll() is not None:
                raise SystemExit(f"the run ended before {prompts} prompts were scored")
            time.sleep(0.02)

    def wait(self, timeout: float = 900) -> float:
        """When the run ended."""
        self.proc.wait(timeout=timeout)
        ended = time.monotonic()
        self._reader.join(timeout=10)
        return ended

    def check(self, prompts: int) -> None:
        """SystemExit with its last lines if the run failed; AssertionError unless every one of `prompts` prompts
        was written exactly once."""
        if self.proc.returncode != 0:
            raise SystemExit("the run failed:\n" + "".join(line for _, line in self.lines[-30:]))
        ids = [json.loads(line)["id"] for line in (self.out / "samples.jsonl").read_text().splitlines()]
        assert len(ids) == len(set(ids)) == prompts, (len(ids), len(set(ids)))

    def said_after(self, at: float, text: str) -> float:
        """When the client first logged a line holding `text` after `at`."""
        return next(t for t, line in self.lines if t > at and text in line)
