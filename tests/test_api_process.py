"""The caller's process stays the caller's after a run: its environment and its matplotlib settings are as they
were. Each check runs in a fresh interpreter (what a run would change is process-wide, and the test process's own
state may already hold it). Baseline runs: no servers; only `rmbench_client`'s public names are used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers_data import require_rmbench

BASELINE = {"model": "baseline:random", "benchmark": "rm-bench"}


def in_fresh_python(script: str, env: dict[str, str] | None = None) -> dict:
    """What `script` prints last, as JSON, run by a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_run_leaves_the_environment_as_it_was(tmp_path: Path):
    """threadpoolctl's import sets KMP_DUPLICATE_LIB_OK (which hides Intel OpenMP's duplicate-library error in a
    torch process and the servers started after): the run's BLAS limit imports it, and takes that back out."""
    data = require_rmbench()
    script = (
        "import json, os, rmbench_client as rmb\n"
        "before = dict(os.environ)\n"
        f"rmb.evaluate({BASELINE!r}, data={str(data)!r}, out={str(tmp_path / 'run')!r}, limit=3)\n"
        "print(json.dumps({k: [before.get(k), os.environ.get(k)] for k in set(before) | set(os.environ)\n"
        "                  if before.get(k) != os.environ.get(k)}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KMP_DUPLICATE_LIB_OK" and "BLAS" not in k}
    assert in_fresh_python(script, env) == {}


def test_heatmaps_leave_the_callers_matplotlib_as_it_was(tmp_path: Path):
    """A notebook's backend and current figure stay its own: the heatmaps are drawn without pyplot."""
    data = require_rmbench()
    out = tmp_path / "run"
    script = (
        "import json, matplotlib\n"
        "matplotlib.use('pdf')\n"
        "import matplotlib.pyplot as plt, rmbench_client as rmb\n"
        "mine = plt.figure()\n"
        f"rmb.evaluate({BASELINE!r}, data={str(data)!r}, out={str(out)!r}, limit=8, heatmaps=True)\n"
        "print(json.dumps({'backend': matplotlib.get_backend(), 'figures': plt.get_fignums(),\n"
        "                  'current': plt.gcf() is mine}))\n"
    )
    assert in_fresh_python(script) == {"backend": "pdf", "figures": [1], "current": True}
    assert (out / "heatmap-overall.png").read_bytes().startswith(b"\x89PNG")
