"""The package as it is shipped: `pip wheel .` and `python -m build --sdist` from a clean clone, and a wheel built from
that sdist; none holds the tests or a large file, the two wheels hold the same files, all three carry one version
that names the commit.

CI builds them with build isolation (its packages from the index, as a user's pip does) and hands them over in
`RMBENCH_DIST_DIR` (the sdist, the wheel of the clone, the wheel of the sdist in `from-sdist/`); without it this
test builds them itself from a clone of HEAD, without isolation (the dev extra has setuptools, setuptools-scm and
build), so that the checkout's own files are never written to.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LARGE = 100_000  # bytes: the largest file the package needs is the report page's script, about 23 kB
SHIPPED = {"rmbench_client/py.typed", "rmbench_client/_version.py", "rmbench_client/report/assets/report.js",
           "rmbench_client/report/assets/report.html", "rmbench_client/cli/__init__.py"}  # fmt: skip


def _build(tmp_path: Path) -> Path:
    clone, out = tmp_path / "clone", tmp_path / "dist"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    run = {"capture_output": True, "text": True, "timeout": 300, "check": True}
    build = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), str(clone)]
    subprocess.run(build, **run)
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "-w", str(out), str(clone)], **run)
    (sdist,) = out.glob("*.tar.gz")
    subprocess.run([*pip, "-w", str(out / "from-sdist"), str(sdist)], **run)
    return out


def _wheel_files(wheel: Path) -> dict[str, int]:
    with zipfile.ZipFile(wheel) as z:
        return {i.filename: i.file_size for i in z.infolist() if ".dist-info/" not in i.filename}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("RMBENCH_DIST_DIR")
    return Path(given) if given else _build(tmp_path_factory.mktemp("dist"))


def test_the_sdist_holds_the_package_and_no_tests_or_large_files(dist):
    (sdist,) = dist.glob("rmbench_client-*.tar.gz")
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1]: m.size for m in tar.getmembers() if m.isfile()}
    assert {"pyproject.toml", "README.md", "CHANGELOG.md", "PKG-INFO"} <= set(members) and SHIPPED <= set(members)
    tops = {name.split("/")[0] for name in members}
    assert tops <= {"pyproject.toml", "README.md", "CHANGELOG.md", "PKG-INFO", "MANIFEST.in", "setup.cfg",
                    "rmbench_client", "rmbench_client.egg-info"}, tops  # fmt: skip
    assert not [n for n, size in members.items() if size > LARGE or n.endswith((".pyc", ".png", ".sqlite"))]


def test_the_wheels_of_the_clone_and_of_the_sdist_hold_the_same_files_and_version(dist):
    (wheel,) = dist.glob("rmbench_client-*.whl")
    (again,) = (dist / "from-sdist").glob("rmbench_client-*.whl")
    assert wheel.name == again.name  # one version (the name carries it)
    files = _wheel_files(wheel)
    assert files.keys() == _wheel_files(again).keys() and SHIPPED <= files.keys()
    assert all(name.startswith("rmbench_client/") for name in files), sorted(files)
    assert not [n for n, size in files.items() if size > LARGE or "/tests/" in n or n.endswith(".pyc")]
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        points = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))).decode()
        built = z.read("rmbench_client/_version.py").decode()
    version = next(line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Version: "))
    assert f"version = {version!r}" in built and "rmbench-client = rmbench_client.cli:main" in points
    assert "Provides-Extra: ray" in meta and "Provides-Extra: dev" in meta
    if "+" in version:  # a development build names its commit
        node = built.split("node = '", 1)[1].split("'", 1)[0]
        assert version.split("+", 1)[1].startswith(node[:8]), (version, node)
