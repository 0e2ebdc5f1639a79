"""`serve`: the servers of a config as a context manager, started on entry and stopped on any exit.

    with serve(cfg) as servers:        # every role with a `serve` section, healthy on entry
        result = evaluate(servers.config)

Each role is started by its launcher: the local one (`launcher.start_servers`, one server per endpoint URL) or,
for a role whose `serve.cluster` is `ray`, the Ray one (`cluster.placement`, which needs the `ray` extra). The
servers are recorded in their own state directory (a fresh temporary one unless `state_dir` is given), so leaving
the block stops exactly the servers it started and never those of `rmbench-client serve` or of another block.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import arguments
from .. import constants as C
from ..api import ConfigSource, load_config
from ..config.schema import RunConfig
from ..errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Servers:
    """What `serve` started: the config to evaluate with (its endpoints are the servers'), each role's URLs, and
    the state directory they are recorded in."""

    config: RunConfig
    urls: Mapping[str, tuple[str, ...]]
    state_dir: Path
    pids: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


def _cluster(cfg: RunConfig, role: str) -> str:
    spec = cfg.roles[role].serve  # type: ignore[index]
    return spec.cluster if spec is not None else "local"  # no serve section: the local launcher says so


def _roles(cfg: RunConfig, roles: Sequence[str] | None) -> list[str]:
    arguments.not_one_name("roles", roles)  # not the roles r, e, w, a, r, d
    served = [str(r) for r, rc in cfg.roles.items() if rc.serve is not None]
    names = list(dict.fromkeys(roles)) if roles else served
    unknown = [r for r in names if r not in cfg.roles]
    if unknown:
        raise ConfigError(f"role {', '.join(unknown)} is not in the config (it has {', '.join(cfg.roles) or 'none'})")
    if not names:
        raise ConfigError("no role in the config has a 'serve' section: nothing to start")
    return names


@contextlib.contextmanager
def serve(
    config: ConfigSource,
    *,
    roles: Sequence[str] | None = None,
    repo_root: str | Path | None = None,
    state_dir: str | Path | None = None,
    timeout: float = C.SERVER_READY_TIMEOUT_S,
) -> Iterator[Servers]:
    """Start the servers of `config` (the roles in `roles`, default every role with a `serve` section), wait until
    each answers `/health`, and stop them when the block ends, however it ends (an exception, Ctrl-C). A process
    ended on the spot inside the block takes its local servers with it: they get SIGTERM when the thread that entered
    the block ends (Linux's parent-death signal). Replicas on Ray are detached actors: they stay until `stop`.

    `repo_root` is where relative model paths and the server environment (`.venv-server`) are found (default: the
    current directory, as for `rmbench-client serve`).

    Raises:
        TypeError: `roles` is one name, not a sequence of them; `timeout` is no number, a path no path.
        ConfigError: the config is invalid (`config` is a `RunConfig`, a YAML path or a mapping, as `evaluate`
            takes), a role that is not in the config, no role to serve, or a `timeout` of 0 or less.
        ServerError: a server could not be started (port in use, model path missing, not healthy in `timeout`
            seconds); whatever this call started is stopped first.
    """
    arguments.seconds(timeout=timeout)
    arguments.paths(repo_root=repo_root, state_dir=state_dir)
    if not timeout > 0:  # NaN too
        raise ConfigError(f"timeout={timeout!r}: a server needs some seconds to become healthy")
    config = load_config(config)
    names = _roles(config, roles)
    own_state = state_dir is None
    states = Path(tempfile.mkdtemp(prefix="rmb-serve-")) if state_dir is None else Path(state_dir)
    local = [r for r in names if _cluster(config, r) == "local"]
    remote = [r for r in names if r not in local]
    urls: dict[str, list[str]] = {}
    pids: dict[str, list[int]] = {}
    try:
        with contextlib.ExitStack() as stack:
            if local:
                from ..launcher import start_servers, stop_servers

                stack.callback(stop_servers, states)  # also after a start that fails half way
                for info in start_servers(
                    config, roles=local, repo_root=repo_root, state_dir=states, timeout=timeout, end_with_caller=True
                ):  # a killed caller leaves no server behind
                    urls.setdefault(info.role, []).append(info.url)
                    pids.setdefault(info.role, []).append(info.pid)
            if remote:
                from ..cluster import placement  # imports Ray itself only when it starts replicas

                stack.callback(placement.stop_on_ray, config, remote)
                for replica in placement.serve_on_ray(config, remote, repo_root=repo_root, timeout=timeout):
                    urls.setdefault(replica.role, []).append(replica.url)
            yield Servers(
                config=config,
                urls={r: tuple(u) for r, u in urls.items()},
                state_dir=states,
                pids={r: tuple(p) for r, p in pids.items()},
            )
    finally:
        if own_state:
            shutil.rmtree(states, ignore_errors=True)
