"""Where the shared test data lives (outside the repository; never copied into it).

`RMBENCH_DATA_DIR` points at the rm-bench directory; unset, it is `<repo>/../shared/data/rm-bench`.
The IXC-2.5-Reward reference scores sit beside it in `../reference-results/`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RMBENCH_FILES = (
    "chat_filtered.json",
    "code_filtered.json",
    "safety-refuse_filtered.json",
    "safety-response_filtered.json",
)


def rmbench_dir() -> Path:
    """The directory of the four RM-Bench domain files."""
    env = os.environ.get("RMBENCH_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data" / "rm-bench"


def ixc_file() -> Path:
    """The published IXC-2.5-Reward per-prompt RM-Bench scores (1327 records, no ids or domains)."""
    return rmbench_dir().parent / "reference-results" / "ixc25-reward-rm-bench-scores.json"


def require_rmbench() -> Path:
    """The RM-Bench directory, or skip the test when the shared files are not there."""
    d = rmbench_dir()
    absent = [name for name in RMBENCH_FILES if not (d / name).is_file()]
    if absent:
        pytest.skip(f"shared RM-Bench data not found in {d} (missing {', '.join(absent)}); set RMBENCH_DATA_DIR")
    return d


def require_ixc() -> Path:
    """The IXC reference file, or skip the test when it is not there."""
    f = ixc_file()
    if not f.is_file():
        pytest.skip(f"IXC reference scores not found at {f}; set RMBENCH_DATA_DIR to the rm-bench directory")
    return f


# vLLM's CPU kernels sum in an order that depends on which sequences share a batch, so one server scoring the same
# text in two runs may differ in the last float32 bits (seen: 8e-7). Runs that split the same prompts differently
# (workers, replicas) are compared to that noise; their scoring against transformers is checked to 1e-4 elsewhere.
BATCH_NOISE = 1e-5


def same_up_to_batching(got: object, want: object, tol: float = BATCH_NOISE) -> bool:
    """Whether two parsed outputs are equal, floats within `tol` of each other."""
    if isinstance(got, float) or isinstance(want, float):
        return isinstance(got, int | float) and isinstance(want, int | float) and abs(got - want) <= tol
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same_up_to_batching(got[k], want[k], tol) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(same_up_to_batching(a, b, tol) for a, b in zip(got, want, strict=True))
    return got == want
