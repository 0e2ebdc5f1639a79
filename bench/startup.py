"""`make bench`'s start-up figures: what the version and the stamp cost a process, measured in fresh processes.

    .venv/bin/python bench/startup.py     # BENCH_STARTUP_REPEATS fresh processes per figure (15)

- `import rmbench_client`: the package alone (the version is read on first use only);
- `__version__` as an installed package reads it: the built `_version.py` (no git, no metadata);
- in a checkout (an editable install): whether it is still at the commit it was built from (two `git` calls), and
  `__version__` in one that moved on (setuptools-scm in a process of its own);
- the stamp of one run (results/stamp.py: the version cached, the libraries' versions, the masked config), in the
  process that writes the summary: what each run pays.

Each figure is the median wall time (and the range) of its part in fresh `python -c` processes, timed inside the
process (the interpreter's own start left out), measured back to back. Writes bench/results-startup.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPEATS = int(os.environ.get("BENCH_STARTUP_REPEATS", "15"))
RESULTS = ROOT / "bench" / "results-startup.json"

# each snippet prints the seconds its timed part took (after its set-up), timed inside the process
TIMED = "import time; {setup}; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
VERSION = "import rmbench_client; from rmbench_client import version"  # the package and version.py imported
SNIPPETS = {
    "import rmbench_client": ("pass", "import rmbench_client"),
    "__version__, installed (the built _version.py)": (
        f"{VERSION}; version.checkout = lambda: None",
        "version.client_version()",
    ),
    "a checkout: is it still at its build? (_version.py, git rev-parse, git status)": (
        VERSION,
        "version.moved_on(version.checkout(), version.built())",
    ),
    "__version__, a checkout moved on (and setuptools-scm)": (
        f"{VERSION}; version.moved_on = lambda root, build: True",
        "version.client_version()",
    ),
}
STAMP = (
    "from rmbench_client.config.loading import config_of; from rmbench_client.results.stamp import stamp; "
    "from rmbench_client import version; version.checkout = lambda: None; "
    "cfg = config_of({'model': 'rm', 'roles': {'reward': {'served_model': 'rm', 'endpoints': ['http://h:1']}}}, "
    "{}, 'bench'); import time; t = time.perf_counter(); "
    "stamp(cfg, {'template': {'digest': 'ab'}}); print(time.perf_counter() - t)"
)


def seconds(code: str) -> float:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(proc.stdout.strip().splitlines()[-1])


def measure(code: str) -> dict[str, float]:
    times = sorted(seconds(code) for _ in range(REPEATS))
    return {"median_ms": 1000 * statistics.median(times), "min_ms": 1000 * times[0], "max_ms": 1000 * times[-1]}


def main() -> int:
    found = {name: measure(TIMED.format(setup=setup, code=code)) for name, (setup, code) in SNIPPETS.items()}
    found["the stamp of one run (version cached)"] = measure(
        STAMP.replace("stamp(cfg", "stamp(None); t = time.perf_counter(); stamp(cfg")
    )
    found["the stamp of one run (the version read then)"] = measure(STAMP)
    RESULTS.write_text(json.dumps({"repeats": REPEATS, "python": sys.version.split()[0], "figures": found},
                                  indent=2) + "\n")  # fmt: skip
    width = max(map(len, found))
    for name, f in found.items():
        print(f"{name:<{width}}  {f['median_ms']:7.1f} ms  ({f['min_ms']:.1f} to {f['max_ms']:.1f})")
    print(f"written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
