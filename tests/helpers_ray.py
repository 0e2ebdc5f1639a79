"""The processes of a Ray cluster on this machine, read from /proc: a replica's server group, a node's processes,
the servers listening on given ports (tests/test_ray.py, tests/test_ray_replicas.py, bench/ray_faults.py); this
process's Ray set to one cluster's token.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# What Ray 2.52 warns of in a test process: its cluster_utils leaves the nodes' /dev/null handles to the garbage
# collector (2.60 closes them), and ray.init tips that replicas without GPUs will see them in future releases (ours
# hide them themselves: cluster/replica.py; `serve` silences the tip in cluster/connect.py)
RAY_2_52_WARNINGS = [
    pytest.mark.filterwarnings("ignore:unclosed file <_io.TextIOWrapper name='/dev/null':ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Exception ignored in. <_io.FileIO name='/dev/null'"),
    pytest.mark.filterwarnings("ignore:Tip. In future versions of Ray:FutureWarning"),
]


@contextlib.contextmanager
def token_auth(home: Path, token: str) -> Iterator[None]:
    """This process's Ray in token mode with `token` (HOME in `home`: no real token is read or written), the
    environment as it was afterwards. Ray caches the token it first read for the whole process, so the cache is
    dropped both ways: without that, a second cluster in the same pytest run is sent the first one's token."""
    from ray._private.authentication_test_utils import reset_auth_token_state

    saved = dict(os.environ)
    os.environ.update({"HOME": str(home), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token})
    reset_auth_token_state()  # the config and the token are read from the environment again
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        reset_auth_token_state()


def _stat(pid: str) -> list[str]:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2 :].split()  # state, ppid, pgrp, ...


def group_alive(pgid: int) -> list[int]:
    """Live processes of process group `pgid` (a replica's guard leads its server's group); zombies are not."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = _stat(entry)
                if int(fields[2]) == pgid and fields[0] != "Z":
                    found.append(int(entry))
    return found


def arguments(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")


def servers_on(ports: set[int], model: bytes = b"tiny-reward") -> list[int]:
    """Live processes whose command line serves `model` on one of `ports` (servers and their guards)."""
    found = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            args = arguments(int(entry)) if entry.isdigit() else []
            if model in args and any(a == b"--port" and args[i + 1 : i + 2] == [str(p).encode()]
                                     for i, a in enumerate(args) for p in ports):  # fmt: skip
                found.append(int(entry))
    return found


def server_processes(url: str) -> list[int]:
    """The vLLM server of the replica listening at `url` (not its guard, whose arguments name the port too)."""
    found = []
    for pid in servers_on({int(url.rsplit(":", 1)[1])}):
        with contextlib.suppress(OSError, IndexError):
            if arguments(pid)[1] != b"-c":
                found.append(pid)
    return found


def node_processes(node: Any) -> list[int]:
    """Every process of a ray.cluster_utils node: its own (raylet, ...) and their descendants (the workers)."""
    pids = {info.process.pid for infos in node.all_processes.values() for info in infos}
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parents[int(entry)] = int(_stat(entry)[1])
    while grown := {pid for pid, parent in parents.items() if parent in pids} - pids:
        pids |= grown
    return sorted(pids)
