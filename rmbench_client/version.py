"""The client's version, as setuptools-scm names it from git: a release's tag (`0.2.0`), else a development build
that names its commit (`0.2.dev3+g1a2b3c4d5`, with `.d<date>` when the tree had uncommitted changes).

An installed package (a wheel, an sdist) carries the version it was built as in `_version.py`, which setuptools-scm
writes at every build. An editable install runs the checkout's files, which move on after the install: there the
version is the built one only while the checkout is still at the commit it was built from with no uncommitted
change (two `git` calls tell), else the checkout's own, from setuptools-scm (the `dev` extra; about 0.25 s in a
process of its own). Computed once, on first use: `import rmbench_client` reads nothing of this.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

UNKNOWN = "0+unknown"  # a checkout never built or installed, with no setuptools-scm to ask (PEP 440's local segment)
MODIFIED = "modified"  # a checkout moved on since its build, with no setuptools-scm to name it: the built version +
PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Built:
    """What `_version.py` says: the version, and the commit (git's node, "g" and its hash) and state built from."""

    version: str
    node: str | None
    dirty: bool


def built() -> Built | None:
    """The version the package was built as; None where no build wrote it (a checkout never installed)."""
    try:
        found = importlib.import_module(f"{__package__}._version")
    except ImportError:
        return None
    return Built(str(found.version), getattr(found, "node", None), bool(getattr(found, "dirty", False)))


def checkout() -> Path | None:
    """The git checkout the package's files are in (an editable install), or None (installed into site-packages)."""
    root = PACKAGE_DIR.parent
    return root if (root / ".git").exists() and (root / "pyproject.toml").is_file() else None


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):  # no git on the PATH, or one that hangs
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def moved_on(root: Path, build: Built) -> bool:
    """Whether the checkout differs from what the build recorded: another commit, or uncommitted changes (then or
    now: a tree dirty at build time may have changed since)."""
    head = _git(root, "rev-parse", "HEAD")
    changes = _git(root, "status", "--porcelain", "--untracked-files=no")
    if head is None or changes is None or build.node is None:
        return True
    return build.dirty or bool(changes) or not head.startswith(build.node.removeprefix("g"))


def scm_version(root: Path) -> str | None:
    """The checkout's version as setuptools-scm names it; None without setuptools-scm or a readable git history.
    In a process of its own: setuptools-scm installs logging handlers (rich's) in the process that asks it."""
    if importlib.util.find_spec("setuptools_scm") is None:
        return None
    command = [sys.executable, "-m", "setuptools_scm", "--root", str(root), "--config", str(root / "pyproject.toml")]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    found = proc.stdout.strip()
    return found if proc.returncode == 0 and found and "\n" not in found else None


@functools.cache
def client_version() -> str:
    """The version of the running client (module docstring); cached for the process."""
    build = built()
    root = checkout()
    if build is None:
        return (scm_version(root) if root is not None else None) or UNKNOWN
    if root is None or not moved_on(root, build):
        return build.version
    # the checkout's files are not what the build recorded: never the built version alone
    return scm_version(root) or f"{build.version}{'.' if '+' in build.version else '+'}{MODIFIED}"
