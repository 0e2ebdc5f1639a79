"""One replica of a role on a Ray cluster: a detached Ray actor that runs the vLLM server command `serve` built
(launcher/commands.py) on its node, on a port it picks there, and stops it again.

The module imports nothing but the standard library (Ray only inside the actor), and `serve` ships it to the
cluster by value: a node needs Ray and the server environment, not rmbench-client.

The server runs under a small guard process that leads the server's process group: when the actor's worker dies
(`ray.kill`, a node lost, a crash: Ray kills a worker with SIGKILL, so no Python clean-up runs) the guard sees its
parent gone and ends the whole group, so no server outlives its replica. The actor's `repr` is the server's URL:
Ray records it each time the actor is (re)created, so the state API tells the client where the replica listens
now (ray_discovery.py).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

# Runs as `python -c GUARD PARENT_PID GRACE COMMAND...` in a new session: starts the server in its own group
# and ends the group when the parent (the actor's worker) is gone, on SIGTERM, or when the server exits.
GUARD = r"""
import os, signal, subprocess, sys, time
parent, grace, cmd = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
asked = []
signal.signal(signal.SIGTERM, lambda *_: asked.append(1))
child = subprocess.Popen(cmd)
while child.poll() is None and not asked and os.getppid() == parent:
    time.sleep(0.2)
if child.poll() is None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
code = child.poll()
signal.signal(signal.SIGTERM, signal.SIG_DFL)
os.killpg(0, signal.SIGKILL)  # what is left of the group (the server's own children), the guard with it
sys.exit(code or 0)
"""
LOG_TAIL_LINES = 40


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _with_value(command: list[str], flag: str, value: str) -> list[str]:
    """The command with `flag`'s value replaced (or the flag added)."""
    if flag in command[:-1]:
        i = command.index(flag)
        return [*command[: i + 1], value, *command[i + 2 :]]
    return [*command, flag, value]


class Replica:
    """A vLLM server on the node Ray placed this actor on (decorated with `ray.remote` by launcher/ray_cluster)."""

    def __init__(self, command: list[str], env: dict[str, str], unset: list[str], grace: float) -> None:
        import ray

        ip: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]  # Ray's own function is untyped
        port = _free_port(ip)
        host = f"[{ip}]" if ":" in ip else ip
        self.url = f"http://{host}:{port}"
        self.node_id = ray.get_runtime_context().get_node_id()
        self.node_ip = ip
        self.grace = grace
        if not os.path.isfile(command[0]) and shutil.which(command[0]) is None:
            raise RuntimeError(f"{command[0]} not found on node {ip}: the server environment must be at the same "
                               "path on every node (make server-venv there)")  # fmt: skip
        self.command = _with_value(_with_value(command, "--port", str(port)), "--host", ip)
        self.tmpdir = tempfile.mkdtemp(prefix=f"rmb-ray-{port}-")  # short: vLLM puts sockets there
        server_env = {k: v for k, v in os.environ.items() if k not in unset} | env | {"TMPDIR": self.tmpdir}
        with contextlib.suppress(KeyError, OSError):
            cache = os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")
            server_env.setdefault("TORCHINDUCTOR_CACHE_DIR", cache)  # kept across servers, as locally
        self.log = os.path.join(self.tmpdir, "server.log")
        with open(self.log, "wb") as out:
            out.write(f"$ {' '.join(self.command)}\n".encode())
            out.flush()
            guard = [sys.executable, "-c", GUARD, str(os.getpid()), str(grace), *self.command]
            self.proc = subprocess.Popen(guard, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         env=server_env, start_new_session=True)  # fmt: skip

    def __repr__(self) -> str:
        return f"Replica({self.url})"

    def info(self) -> dict[str, Any]:
        """Where the server runs, and its exit status and the end of its log once it has exited."""
        code = self.proc.poll()
        found: dict[str, Any] = {"url": self.url, "node_id": self.node_id, "node_ip": self.node_ip,
                                 "pid": self.proc.pid, "log": self.log, "exit": code}  # fmt: skip
        if code is not None:
            with contextlib.suppress(OSError):
                with open(self.log, errors="replace") as f:
                    found["tail"] = "\n".join(f.read().splitlines()[-LOG_TAIL_LINES:])
        return found

    def stop(self) -> bool:
        """End the server's process group (SIGTERM, SIGKILL after the grace time); True once nothing is left."""
        for sig, wait in ((signal.SIGTERM, self.grace + 2.0), (signal.SIGKILL, 5.0)):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            deadline = time.monotonic() + wait
            while self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # members that outlived the guard
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        return self.proc.poll() is not None
