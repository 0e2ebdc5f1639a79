"""Local model servers for a config's roles: `commands` builds each server's command line and environment,
`processes` starts them, waits until they are healthy, records them, and stops exactly them; `releases` reads which
flags the serving vLLM release accepts. (A role on a Ray cluster is served by `cluster/`, which imports this
folder; nothing here imports it.)"""

from .commands import cpu_set, server_command, server_env
from .processes import ServerInfo, local_servers, recorded_servers, start_servers, stop_servers, wait_healthy

__all__ = [
    "ServerInfo",
    "cpu_set",
    "local_servers",
    "recorded_servers",
    "server_command",
    "server_env",
    "start_servers",
    "stop_servers",
    "wait_healthy",
]
