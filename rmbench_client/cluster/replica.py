"""One replica of a role on a Ray cluster: a detached Ray actor that runs the vLLM server command `serve` built
(launcher/commands.py) on its node, on a port it picks there, watches it, and stops it again.

The module imports nothing but the standard library (Ray only inside the actor), and `serve` ships it to the
cluster by value: a node needs Ray and the server environment, not rmbench-client.

A dead server is replaced: the actor watches its server (the process's exit; `/health` failing, a dead engine's
503 included, `Watch.failures` times in a row once it was healthy; no health within `Watch.start_timeout` at start)
and then stops what is left of it, removes its scratch directory and ends its own worker, so that Ray restarts the
actor (`max_restarts`) where its placement group has room, and the state API lists the new URL. So is a server
whose engine stops behind a `/health` that answers (a stuck collective, a wedged GPU): when it finished nothing since
the last look (vLLM's finished requests and tokens in `/metrics`), the watch sends it a canary of its own (one
token's completion, or one short text's pooling); one unanswered for `Watch.stall_timeout` ends the replica.

No server outlives its replica: the server runs under a guard process that leads the server's process group and is
no child of the actor's worker (Ray ends a dead worker's children with SIGKILL, which would leave the server an
orphan); the guard holds the read end of a pipe whose write end only the worker holds, so it learns of the worker's
death however it happens (`ray.kill`, the node's raylet killed, a SIGKILL, an OOM kill), then ends the whole group
and removes the replica's scratch directory. The server itself gets SIGKILL should the guard die first
(PR_SET_PDEATHSIG). The actor's `repr` is the server's URL: Ray records it each time the actor is (re)created, so
the state API tells the client where the replica listens now (discovery.py).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

# Runs as `python -c GUARD WORKER_FD STATUS_FD GRACE TMPDIR COMMAND...` in a new session. It forks once so that it
# is no child of the actor's worker, starts the server in its group, reports the server's pid and exit status on
# STATUS_FD, and ends the group when the worker is gone (WORKER_FD reads EOF), on SIGTERM, or when the server exits.
GUARD = r"""
import ctypes, os, select, shutil, signal, subprocess, sys
worker, status, grace, tmpdir, cmd = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5:]
if os.fork():
    os._exit(0)
asked = []
signal.signal(signal.SIGTERM, lambda *_: asked.append(1))
def die_with_guard():
    with_libc = ctypes.CDLL(None, use_errno=True)
    with_libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
def tell(line):
    try:
        os.write(status, line.encode())
    except OSError:
        pass
child = subprocess.Popen(cmd, preexec_fn=die_with_guard, pass_fds=())
tell(f"pid {child.pid}\n")
gone = False
while child.poll() is None and not asked and not gone:
    gone = bool(select.select([worker], [], [], 0.2)[0])  # readable only at EOF: the worker never writes
if child.poll() is None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    try:
        child.wait(grace)
    except subprocess.TimeoutExpired:
        pass
tell(f"exit {child.poll()}\n")
if gone:  # nobody else will: the replica's sockets and log go with it
    shutil.rmtree(tmpdir, ignore_errors=True)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
os.killpg(0, signal.SIGKILL)  # what is left of the group (the server's own children), the guard with it
"""
LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class Watch:
    """How the actor watches its server: a `/health` probe every `period` s (each within `timeout` s); `failures`
    failed probes in a row once it was healthy end the replica, as does no health within `start_timeout` s, or a
    canary unanswered for `stall_timeout` s while the engine finished nothing; a server that exits before it was ever
    healthy is left `linger` s for `serve` to read its log. With an `idle_timeout`,
    a server that had no request for that long (vLLM's request counters in /metrics unchanged, none running) is
    stopped and the replica removed for good with its placement group: its resources go back to the cluster."""

    period: float = 5.0
    timeout: float = 10.0
    failures: int = 3
    start_timeout: float = 600.0
    linger: float = 15.0
    idle_timeout: float | None = None  # the lease: no request for this long and the replica removes itself
    stall_timeout: float | None = 60.0  # a canary unanswered this long, nothing finished meanwhile: ended (None: off)


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


def _get(url: str | urllib.request.Request, timeout: float) -> Any:
    """GET `url` (or a request: a POST) on the replica's own server (plain HTTP, on its node): never through a proxy
    of the node's environment; an HTTP error status raises. Built per call: with this module pickled by value for
    the nodes, a module-level opener would carry an SSL context, which Ray 2.52's pickler refuses."""
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler({}), urllib.request.HTTPHandler(),
                    urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor()):  # fmt: skip
        opener.add_handler(handler)
    return opener.open(url, timeout=timeout)


def healthy(url: str, timeout: float) -> bool:
    """Whether the server answers `/health` with 200 (a dead engine's 503, a refusal or no answer: no)."""
    try:
        with _get(f"{url}/health", timeout) as answer:
            return bool(answer.status == 200)
    except (OSError, ValueError):
        return False


def metrics_sum(url: str, timeout: float, names: tuple[str, ...]) -> float | None:
    """The sum of the server's `/metrics` samples of these names (each label set); None when it cannot be read."""
    try:
        with _get(f"{url}/metrics", timeout) as answer:
            text = answer.read().decode(errors="replace")
    except (OSError, ValueError):
        return None
    total = 0.0
    for line in text.splitlines():
        if line.split("{", 1)[0].split(" ", 1)[0] in names:
            with contextlib.suppress(ValueError, IndexError):
                total += float(line.rsplit(" ", 1)[1])
    return total


def requests_seen(url: str, timeout: float) -> float | None:
    """A number that grows with every request the server took (vLLM's `http_requests_total`, /health and /metrics
    excluded), plus those running now (`vllm:num_requests_running`); None when /metrics cannot be read."""
    return metrics_sum(url, timeout, ("http_requests_total", "vllm:num_requests_running"))


def finished(url: str, timeout: float) -> float | None:
    """A number that grows whenever the server's engine finishes work (vLLM's finished requests, prompt and generated
    tokens); None when /metrics cannot be read."""
    return metrics_sum(url, timeout, ("vllm:request_success_total", "vllm:prompt_tokens_total",
                                      "vllm:generation_tokens_total"))  # fmt: skip


def canary_request(url: str) -> tuple[str, bytes] | None:
    """The smallest real request for the server's engine (its path and JSON body): one short text's pooling on a
    pooling runner, one token's completion on a generate runner; None when neither route is served. Asks
    `/v1/models` and `/openapi.json`, which its API process answers whatever its engine does."""
    with _get(f"{url}/v1/models", 10.0) as answer:
        model = json.loads(answer.read())["data"][0]["id"]
    with _get(f"{url}/openapi.json", 10.0) as answer:
        paths = json.loads(answer.read()).get("paths", {})
    if "/pooling" in paths:
        return "/pooling", json.dumps({"model": model, "input": ["ok"]}).encode()
    if "/v1/completions" in paths:
        return "/v1/completions", json.dumps({"model": model, "prompt": "ok", "max_tokens": 1}).encode()
    return None


class Canary:
    """The watch's own request to a server that finished nothing since its last look, in a thread of its own: `done`
    once it ended, `ok` when the server answered it at all (an error status is an answer)."""

    def __init__(self, url: str, timeout: float, request: tuple[str, bytes]) -> None:
        self.sent = time.monotonic()
        self.ok = False
        self.done = threading.Event()
        path, body = request
        post = urllib.request.Request(f"{url}{path}", data=body, headers={"content-type": "application/json"})
        threading.Thread(target=self._send, args=(post, timeout), name="rmb-replica-canary", daemon=True).start()

    def _send(self, post: urllib.request.Request, timeout: float) -> None:
        try:
            with _get(post, timeout) as answer:
                answer.read()
            self.ok = True
        except urllib.error.HTTPError:
            self.ok = True
        except (OSError, ValueError):
            pass
        self.done.set()


def _log_tail(path: str) -> str:
    with contextlib.suppress(OSError), open(path, errors="replace") as f:
        return "\n".join(f.read().splitlines()[-LOG_TAIL_LINES:])
    return ""


class Replica:
    """A vLLM server on the node Ray placed this actor on (decorated with `ray.remote` by cluster/placement)."""

    def __init__(self, command: list[str], env: dict[str, str], unset: list[str], grace: float,
                 watch: Watch | None = None, gpus: float = 0.0) -> None:  # fmt: skip
        import ray

        ip: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]  # Ray's own function is untyped
        port = _free_port(ip)
        host = f"[{ip}]" if ":" in ip else ip
        self.url = f"http://{host}:{port}"
        self.node_id = ray.get_runtime_context().get_node_id()
        self.node_ip = ip
        self.grace = grace
        self.watch = watch or Watch()
        if not os.path.isfile(command[0]) and shutil.which(command[0]) is None:
            raise RuntimeError(f"{command[0]} not found on node {ip}: the server environment must be at the same "
                               "path on every node (make server-venv there)")  # fmt: skip
        self.command = _with_value(_with_value(command, "--port", str(port)), "--host", ip)
        self.tmpdir = tempfile.mkdtemp(prefix=f"rmb-ray-{port}-")  # short: vLLM puts sockets there
        # the node's Ray token stays with Ray; a replica that reserves no GPU sees none (Ray leaves the variable as
        # the node has it for an actor without GPUs, or will: its own warning says the default changes)
        hidden = {*unset, "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"}
        server_env = {k: v for k, v in os.environ.items() if k not in hidden} | env | {"TMPDIR": self.tmpdir}
        if not gpus:
            server_env["CUDA_VISIBLE_DEVICES"] = ""
        with contextlib.suppress(KeyError, OSError):
            cache = os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")
            server_env.setdefault("TORCHINDUCTOR_CACHE_DIR", cache)  # kept across servers, as locally
        self.log = os.path.join(self.tmpdir, "server.log")
        worker_r, self._worker_w = os.pipe()  # the guard reads EOF here once this worker is gone
        self._status_r, status_w = os.pipe()  # the guard writes the server's pid and exit status here
        with open(self.log, "wb") as out:
            out.write(f"$ {' '.join(self.command)}\n".encode())
            out.flush()
            guard = [sys.executable, "-c", GUARD, str(worker_r), str(status_w), str(grace), self.tmpdir, *self.command]
            first = subprocess.Popen(guard, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     env=server_env, start_new_session=True, pass_fds=(worker_r, status_w))  # fmt: skip
        os.close(worker_r)
        os.close(status_w)
        first.wait()  # it forked the guard and left: the group it led stays (pgid = its pid)
        self.group = first.pid
        self.server_pid: int | None = None
        self.exit: int | None = None
        self._guard_gone = False
        self._status_lock = threading.Lock()
        self._stopping = threading.Event()
        self.was_healthy = False  # until the watch saw /health answer: a server still starting, not a dead one
        self._finished: float | None = None  # the engine's finished work as /metrics last said (`finished`)
        self._moved = time.monotonic()  # when it last finished something (or answered a canary)
        self._canary: Canary | None = None
        self._request: tuple[str, bytes] | None = None  # the canary's route and body (None: neither route)
        self._asked = False
        self._own = 0  # requests the watch itself made that vLLM counts (the lease leaves them out)
        threading.Thread(target=self._watch, name="rmb-replica-watch", daemon=True).start()

    def __repr__(self) -> str:
        return f"Replica({self.url})"

    def _read_status(self, wait: float = 0.0) -> None:
        """What the guard reported since the last read: the server's pid, its exit status, the guard's end."""
        with self._status_lock:  # the watch and the actor's calls both read: whole lines, each once
            self._read_status_locked(wait)

    def _read_status_locked(self, wait: float) -> None:
        while not self._guard_gone and select.select([self._status_r], [], [], wait)[0]:
            data = os.read(self._status_r, 4096)
            if not data:
                self._guard_gone = True
                self.exit = -1 if self.exit is None else self.exit
            for line in data.decode().splitlines():
                what, _, value = line.partition(" ")
                if what == "pid":
                    self.server_pid = int(value)
                elif what == "exit":
                    self.exit = int(value) if value.lstrip("-").isdigit() else -1
            wait = 0.0

    def info(self, tail: bool = False) -> dict[str, Any]:
        """Where the server runs, whether the watch has seen it healthy yet (`watched`), and its exit status and the
        end of its log once it has exited (or if asked)."""
        self._read_status()
        found: dict[str, Any] = {"url": self.url, "node_id": self.node_id, "node_ip": self.node_ip,
                                 "pid": self.group, "log": self.log, "exit": self.exit,
                                 "watched": self.was_healthy}  # fmt: skip
        if self.exit is not None or tail:
            found["tail"] = _log_tail(self.log)
        return found

    def _watch(self) -> None:
        """End the replica when its server is gone for good, so that Ray starts it again (see the module's doc)."""
        w = self.watch
        deadline, failures = time.monotonic() + w.start_timeout, 0
        seen, active = None, time.monotonic()
        while not self._stopping.wait(w.period):
            self._read_status()
            if w.idle_timeout is not None and self.was_healthy:
                now_seen = requests_seen(self.url, w.timeout)
                now_seen = None if now_seen is None else now_seen - self._own  # the watch's canaries are no use
                if now_seen is None or now_seen != seen:  # unreadable counts as busy: never removed by mistake
                    seen, active = now_seen, time.monotonic()
                elif time.monotonic() - active > w.idle_timeout:
                    self._expire()
            if self.exit is not None:
                if not self.was_healthy:
                    self._stopping.wait(w.linger)  # `serve` reads the log of a server that failed to start
                self._end(f"its server exited with status {self.exit}")
            if healthy(self.url, w.timeout):
                self.was_healthy, failures = True, 0
                self._check_progress()
            elif self.was_healthy:
                failures += 1
                if failures >= w.failures:
                    self._end(f"its server failed /health {failures} times in a row")
            elif time.monotonic() > deadline:
                self._end(f"its server was not healthy within {w.start_timeout:.0f} s")

    def _check_progress(self) -> None:
        """A server whose engine finished nothing since the last look gets a canary; one unanswered for the stall
        timeout, nothing finished meanwhile, ends the replica."""
        stall = self.watch.stall_timeout
        if stall is None:
            return
        now, done = time.monotonic(), finished(self.url, self.watch.timeout)
        if done is not None and done != self._finished:
            self._finished, self._moved = done, now
        canary = self._canary
        if canary is not None and canary.done.is_set():
            self._canary = None
            if canary.ok:
                self._moved = max(self._moved, canary.sent)
        elif canary is not None and now - canary.sent > stall and now - self._moved > stall:
            self._end(f"its server finished nothing for {now - self._moved:.0f} s and answered no request of the "
                      f"watch's within {stall:.0f} s (its engine is stuck, though /health answers)")  # fmt: skip
        if self._canary is None and now - self._moved >= self.watch.period:  # finished nothing since the last look
            with contextlib.suppress(OSError, ValueError, KeyError, IndexError, TypeError):
                if not self._asked:  # its route, asked once
                    self._own += 2  # /v1/models and /openapi.json
                    self._request, self._asked = canary_request(self.url), True
            if self._request is not None:
                self._own += 1
                self._canary = Canary(self.url, stall + self.watch.timeout, self._request)

    def _expire(self) -> None:
        """The lease ran out: stop the server and remove this replica for good (its placement group with it)."""
        import ray

        sys.stderr.write(f"replica {self.url}: no request for {self.watch.idle_timeout:.0f} s; removing it\n")
        sys.stderr.flush()
        self.stop()
        group = ray.util.get_current_placement_group()
        if group is not None:
            ray.util.remove_placement_group(group)  # ends this actor too, without a restart
        ray.kill(ray.get_runtime_context().current_actor, no_restart=True)  # from this thread: exit_actor cannot

    def _end(self, why: str) -> None:
        """Stop what is left of the server, remove the scratch directory, and end this worker: Ray restarts it."""
        if self._stopping.is_set():
            return  # `stop` is under way: the replica is being removed, not replaced
        sys.stderr.write(f"replica {self.url} on node {self.node_ip}: {why}; ending the replica for Ray to start it "
                         f"again. Server log {self.log} (last lines):\n{_log_tail(self.log)}\n")  # fmt: skip
        sys.stderr.flush()
        self.stop()
        os._exit(1)  # an exit Ray did not ask for: it restarts the actor (ray.actor.exit_actor would not)

    def stop(self) -> bool:
        """End the server's process group (SIGTERM, SIGKILL after the grace time); True once nothing is left."""
        self._stopping.set()
        for sig, wait in ((signal.SIGTERM, self.grace + 2.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.group, sig)
            deadline = time.monotonic() + wait
            while _group_alive(self.group) and time.monotonic() < deadline:
                time.sleep(0.1)
            if not _group_alive(self.group):
                break
        self._read_status()
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        return not _group_alive(self.group)


def _group_alive(group: int) -> bool:
    """Whether a process of `group` still runs (a zombie does not: its reaper may be a PID 1 that never reaps)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                with open(f"/proc/{entry}/stat") as f:
                    raw = f.read()
                fields = raw[raw.rindex(")") + 2 :].split()
                if int(fields[2]) == group and fields[0] != "Z":
                    return True
    return False
