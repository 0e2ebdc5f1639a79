"""The client's version: from git (setuptools-scm), the same from `rmbench-client --version` and
`rmbench_client.__version__`, naming its commit; the built version while a checkout is where it was built, the
checkout's own once it moved on; and never read by `import rmbench_client`."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_cli import cli

import rmbench_client as rmb
from rmbench_client import version
from rmbench_client.version import Built

REPO = Path(__file__).resolve().parents[1]
INSTALLED = os.environ.get("RMBENCH_EXPECT_INSTALLED") == "1"  # CI's stage on the installed wheel sets it


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def test_the_command_line_and_the_package_say_the_same_version_naming_the_commit():
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == f"rmbench-client {rmb.__version__}\n"
    if INSTALLED:  # the wheel's own, as its metadata says
        assert rmb.__version__ == importlib.metadata.version("rmbench-client")
        return
    import setuptools_scm

    assert rmb.__version__ == setuptools_scm.get_version(root=str(REPO))
    tags = _git(REPO, "tag", "--points-at", "HEAD").split()
    dirty = bool(_git(REPO, "status", "--porcelain", "--untracked-files=no"))
    if not tags or dirty:  # a development build names its commit
        assert f"+g{_git(REPO, 'rev-parse', '--short=7', 'HEAD')}" in rmb.__version__


def test_the_package_in_use_is_the_installed_one_or_the_checkout(tmp_path):
    """CI's second stage runs the tests against the wheel installed into a new environment: the package (and the
    command's) must come from site-packages there, never from the checkout's folder."""
    script = "import rmbench_client, json; print(json.dumps(rmbench_client.__file__))"
    command = [str(Path(sys.executable).with_name("rmbench-client")), "--version"]
    found = Path(json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                           cwd=tmp_path, check=True).stdout))  # fmt: skip
    in_checkout = REPO in found.resolve().parents
    assert in_checkout is not INSTALLED and Path(rmb.__file__).resolve().parent == found.resolve().parent
    assert ("site-packages" in found.parts) is INSTALLED
    assert subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip().endswith(rmb.__version__)


def test_importing_the_package_reads_no_version(tmp_path):
    """`import rmbench_client` runs no git and imports neither version.py nor importlib.metadata; the first read
    of `__version__` does."""
    script = (
        "import sys, json\n"
        "import rmbench_client\n"
        "names = ('rmbench_client.version', 'subprocess', 'importlib.metadata')\n"
        "before = sorted(m for m in names if m in sys.modules)\n"
        "rmbench_client.__version__\n"
        "print(json.dumps([before, 'rmbench_client.version' in sys.modules]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert json.loads(proc.stdout) == [[], True], proc.stderr


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A git repository with one commit, standing in for the checkout the package's files are in."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for args in (("init", "-q"), ("add", "."), ("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")):
        _git(root, *args)
    monkeypatch.setattr(version, "checkout", lambda: root)
    version.client_version.cache_clear()
    yield root
    version.client_version.cache_clear()


def test_a_checkout_at_its_build_keeps_the_built_version_and_one_moved_on_gets_its_own(checkout, monkeypatch):
    head = _git(checkout, "rev-parse", "HEAD")
    build = Built("1.2.dev3+gabc", f"g{head[:10]}", False)
    monkeypatch.setattr(version, "built", lambda: build)
    monkeypatch.setattr(version, "scm_version", lambda root: "1.2.dev4+gdef")
    assert not version.moved_on(checkout, build) and version.client_version() == "1.2.dev3+gabc"
    (checkout / "pyproject.toml").write_text("[project]\nname = 'y'\n")  # an uncommitted change
    assert version.moved_on(checkout, build)
    _git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two")  # another commit
    assert version.moved_on(checkout, build)
    version.client_version.cache_clear()
    assert version.client_version() == "1.2.dev4+gdef"
    assert version.moved_on(checkout, Built("1.2", f"g{head}", True))  # built from a dirty tree: never trusted


def test_a_moved_on_checkout_without_setuptools_scm_never_claims_the_built_version(checkout, monkeypatch):
    (checkout / "pyproject.toml").write_text("changed")
    monkeypatch.setattr(version, "scm_version", lambda root: None)
    for built, expected in (("1.2.dev3+gabc", "1.2.dev3+gabc.modified"), ("1.2.0", "1.2.0+modified")):
        monkeypatch.setattr(version, "built", lambda built=built: Built(built, "g0", False))
        version.client_version.cache_clear()
        assert version.client_version() == expected
    monkeypatch.setattr(version, "built", lambda: None)  # never built, no setuptools-scm: unknown, never a guess
    version.client_version.cache_clear()
    assert version.client_version() == version.UNKNOWN
