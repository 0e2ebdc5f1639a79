"""The API reference builds from the docstrings (pdoc, as `make docs` runs it) and documents every exported name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import rmbench_client as rmb

pytest.importorskip("pdoc")


def test_the_reference_documents_every_exported_name(tmp_path: Path) -> None:
    make = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    (args,) = re.findall(r"\$\(BIN\)/pdoc -o docs/reference (.*)", make)  # the make target's own arguments
    modules = [a.strip("'").replace("\\\\", "\\") for a in args.split()]
    proc = subprocess.run([sys.executable, "-m", "pdoc", "-o", str(tmp_path), *modules], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "rmbench_client.html").read_text()
    for name in rmb.__all__:
        if name != "__version__":
            assert f'id="{name}"' in page, name
    assert "RunLockedError" in page and "another run is writing" in page.lower()
    assert not (tmp_path / "rmbench_client" / "runner.html").exists()  # the internals are not in it
