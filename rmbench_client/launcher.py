"""Start and stop the model servers a config describes (`rmbench-client serve` / `rmbench-client stop`).

One server process per endpoint URL of every role that has a `serve` section, each in its own process group,
its output in a log file under `.servers/`. `.servers/state.json` records what was started (pid, process start
time, port, log, command) so that `stop` ends exactly those processes and nothing else. Linux only (/proc).
The servers run in their own environment (`.venv-server`); this module never imports torch or vLLM.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import getpass
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlparse

import httpx

from . import constants as C
from .config import RoleConfig, RunConfig, ServeSpec
from .errors import ServerError

# The module that starts vLLM's OpenAI-compatible server; vllm-cpu's `vllm` script fails (PackageNotFoundError:
# the distribution is named vllm-cpu), and `vllm.entrypoints.openai.api_server` is a deprecated alias of it.
CPU_ENTRY = "vllm.entrypoints.launchers.api_server.entry"
# A one-label head otherwise gets a sigmoid and every score is squashed towards 0 or 1.
REWARD_POOLER = '{"use_activation": false}'
TGI_SCRIPT = "servers/tgi.sh"

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


def _port(url: str) -> int:
    parsed = urlparse(url)
    return parsed.port or (443 if parsed.scheme == "https" else 80)


def _loopback(url: str) -> bool:
    return urlparse(url).hostname in ("127.0.0.1", "localhost", "::1")


def _bind_host(url: str) -> str:
    # A loopback URL stays private to this machine; any other name must be reachable from outside.
    return "127.0.0.1" if _loopback(url) else "0.0.0.0"


def _server_key(role: str, role_cfg: RoleConfig, url: str) -> str | None:
    """The API key a server requires: the role's key from the environment. A server reachable from other machines
    without one is refused; the key goes to the server through its environment, never its command line."""
    key = role_cfg.api_key(role)
    if key is None and not _loopback(url):
        raise ServerError(
            f"endpoint {url} of role {role} is not a loopback address: its server would accept requests from any "
            f"machine without a key. Set {role_cfg.api_key_env or C.API_KEY_ENV} (the server then requires it and "
            "the client sends it), or use a 127.0.0.1 URL"
        )
    return key


def _model_arg(path: str, repo_root: Path) -> str:
    """A local model directory as an absolute path (it must exist), or a hub id ("org/name") as given."""
    local = Path(path).expanduser() if Path(path).expanduser().is_absolute() else repo_root / path
    if local.exists():
        return str(local)
    if path.startswith(("/", ".", "~")) or path.count("/") > 1 or local.parent.exists():
        raise ServerError(f"model path {local} does not exist (build the CPU demo models with `make models`)")
    return path


def _spec(role: str, role_cfg: RoleConfig) -> ServeSpec:
    if role_cfg.serve is None:
        raise ServerError(f"role {role} has no 'serve' section: nothing to start for it")
    return role_cfg.serve


def server_command(role: str, role_cfg: RoleConfig, endpoint_url: str, repo_root: Path) -> list[str]:
    """The command that serves `role` at `endpoint_url` (vLLM on GPU or CPU, or TGI in docker)."""
    spec = _spec(role, role_cfg)
    model, port = _model_arg(spec.path, repo_root), str(_port(endpoint_url))
    common = ["--port", port, "--host", _bind_host(endpoint_url), "--max-model-len", str(spec.max_model_len)]
    if spec.engine == "tgi":  # TGI's /generate takes no model name, so served_model is not passed
        if role == "reward":
            raise ServerError("TGI serves causal LMs only; serve the reward model with engine vllm")
        return ["bash", str(repo_root / TGI_SCRIPT), "--model", model, *common, *spec.extra_args]
    common += ["--served-model-name", role_cfg.served_model]
    if spec.engine == "vllm-cpu":
        python = repo_root / C.SERVER_VENV_DIR / "bin" / "python"
        dtype = "float32" if spec.dtype == "auto" else spec.dtype  # auto gives bf16 on CPU: log-probs off by 0.06
        cmd = [str(python), "-m", CPU_ENTRY, "--model", model, *common, "--dtype", dtype, "--enforce-eager",
               "--distributed-executor-backend", "uni", "--kv-cache-memory-bytes", C.SERVER_CPU_KV_CACHE]  # fmt: skip
    else:
        venv_vllm = repo_root / C.SERVER_VENV_DIR / "bin" / "vllm"
        cmd = [str(venv_vllm) if venv_vllm.exists() else "vllm", "serve", model, *common, "--dtype", spec.dtype]
    if spec.data_parallel_size > 1:
        cmd += ["--data-parallel-size", str(spec.data_parallel_size)]
    if role == "reward" and not any(a.startswith("--pooler-config") for a in spec.extra_args):
        cmd += ["--pooler-config", REWARD_POOLER]
    cmd += [f for f in C.LOGPROB_SERVER_FLAGS if f not in spec.extra_args] if role in ("policy", "reference") else []
    return cmd + list(spec.extra_args)


def server_env(spec: ServeSpec, index: int, tmpdir: str | None = None, api_key: str | None = None) -> dict[str, str]:
    """The environment of the server behind endpoint `index` of a role (with the key it requires, if any)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", VLLM_NO_USAGE_STATS="1")
    if api_key:
        env["API_KEY" if spec.engine == "tgi" else "VLLM_API_KEY"] = api_key
    if spec.engine == "vllm-cpu":
        env.pop("VLLM_CPU_KVCACHE_SPACE", None)  # an empty value crashes the worker; the flag sets the size
        # No hub on these machines; one thread each, or three servers on 2 cores collapse to ~10 req/s.
        env.update(HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0", OMP_NUM_THREADS="1")
        env = C.SERVER_CPU_MALLOC_ENV | env
    if spec.gpus:
        env["CUDA_VISIBLE_DEVICES"] = spec.gpus[index]
    if tmpdir:
        env["TMPDIR"] = tmpdir
        # torch caches compiled kernels under TMPDIR; keep them where the next server finds them (vLLM compiles
        # one for the first prompt-logprobs request: about 14 s on 2 cores when the cache is cold).
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"torchinductor_{_user()}"))
    return env


def cpu_set(cores: str, where: str) -> set[int]:
    """The cores of a list like "0", "0,2" or "0-3" that this machine has; ServerError names `where` otherwise."""
    found: set[int] = set()
    try:
        for part in cores.split(","):
            lo, _, hi = part.strip().partition("-")
            found.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise ServerError(f'{where}: {cores!r} is not a list of cores like "0", "0,2" or "0-3"') from None
    available = os.sched_getaffinity(0)
    if not found or not found <= available:
        have = ",".join(map(str, sorted(available)))
        raise ServerError(f"{where}: cores {cores!r} are not all on this machine (it has {have})")
    return found


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid_{os.getuid()}"


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
    served: list[str] = [role for role, rc in cfg.roles.items() if rc.serve is not None]
    names: list[str] = list(dict.fromkeys(roles)) if roles else served
    if not names:
        raise ServerError("no role in the config has a 'serve' section: nothing to start")
    plan: list[tuple[str, str, RoleConfig, int]] = []
    ports: dict[int, str] = {}
    for role in names:
        if role not in cfg.roles:
            raise ServerError(f"role {role} is not in the config (it has {', '.join(cfg.roles) or 'none'})")
        role_cfg = cfg.roles[role]
        spec = _spec(role, role_cfg)
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
            port = _port(url)
            if port in ports:
                raise ServerError(f"port {port} is used twice: {ports[port]} and {where}")
            ports[port] = where
            cmd = server_command(role, role_cfg, url, repo_root)
            program = "docker" if spec.engine == "tgi" else cmd[0]
            if shutil.which(program) is None:
                hint = {"vllm-cpu": "run `make server-venv`", "vllm": "pip install vllm", "tgi": "install docker"}
                raise ServerError(f"{program} not found for role {role} ({hint[spec.engine]})")
            _server_key(role, role_cfg, url)  # refused before anything starts
            _check_port_free(_bind_host(url), port, where)
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
                path.with_suffix(".tmp").write_text(json.dumps([asdict(s) for s in servers], indent=2) + "\n")
                path.with_suffix(".tmp").replace(path)
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


def _healthy(client: httpx.Client, url: str) -> bool:
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
                if _healthy(client, info.url):
                    pending.remove((info, proc))
            if pending and time.monotonic() > deadline:
                raise _failure(pending[0][0], f"was not ready after {timeout:.0f} s")
            if pending:
                time.sleep(C.SERVER_HEALTH_POLL_S)


def wait_healthy(url: str, timeout: float = C.SERVER_READY_TIMEOUT_S) -> None:
    """Return once GET <url>/health answers 200; ServerError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with _client() as client:
        while not _healthy(client, url):
            if time.monotonic() > deadline:
                raise ServerError(f"{url} did not answer /health with 200 within {timeout:.0f} s")
            time.sleep(C.SERVER_HEALTH_POLL_S)


def start_servers(
    cfg: RunConfig,
    roles: Sequence[str] | None = None,
    repo_root: str | Path | None = None,
    state_dir: str | Path | None = None,
    timeout: float = C.SERVER_READY_TIMEOUT_S,
) -> list[ServerInfo]:
    """Start every server of `roles` (default: all with a `serve` section) at once; return when all are healthy.

    On any failure every process this call started is stopped before ServerError is raised.
    """
    root = Path(repo_root or Path.cwd()).resolve()
    states = Path(state_dir) if state_dir else root / C.SERVER_STATE_DIR
    plan = _plan(cfg, roles, root)  # checks everything (paths, ports, programs) before anything starts
    started: list[tuple[ServerInfo, subprocess.Popen[bytes]]] = []
    try:
        with _state(states) as recorded:
            recorded[:] = [s for s in recorded if _members(s)]  # forget servers that are gone
            for role, url, role_cfg, index in plan:
                port = _port(url)
                tmpdir = tempfile.mkdtemp(prefix=f"rmb-{role}-{port}-")  # short: vLLM puts sockets there
                cmd = server_command(role, role_cfg, url, root)
                log = states / f"{role}-{port}.log"
                with open(log, "wb") as out:
                    out.write(f"$ {shlex.join(cmd)}\n".encode())
                    out.flush()
                    spec = _spec(role, role_cfg)
                    cores = cpu_set(spec.cpus[index], f"role {role}: serve.cpus") if spec.cpus else None
                    pin = functools.partial(os.sched_setaffinity, 0, cores) if cores else None  # threads inherit it
                    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                            env=server_env(spec, index, tmpdir, _server_key(role, role_cfg, url)),
                                            cwd=root, start_new_session=True,
                                            preexec_fn=pin)  # fmt: skip
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


def stop_servers(state_dir: str | Path | None = None) -> list[ServerInfo]:
    """Stop every server recorded in the state directory (default ./.servers) and forget them."""
    states = Path(state_dir) if state_dir else Path.cwd() / C.SERVER_STATE_DIR
    with _state(states) as recorded:
        stopped, failed = [], []
        for info in list(recorded):
            try:
                _stop_one(info)
                stopped.append(info)
            except ServerError as exc:
                failed.append(str(exc))
        recorded[:] = [s for s in recorded if s not in stopped]
    if failed:
        raise ServerError("; ".join(failed))
    return stopped
