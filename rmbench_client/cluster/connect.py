"""`serve` and `stop` as Ray drivers: connected to the one cluster the roles name, with its token when it has one.

Ray 2.52 to 2.60 send a driver's token only under `RAY_AUTH_MODE=token`, and only a local cluster found by
`address="auto"` turns that on by itself; against a token-auth cluster without it, `ray.init` retries for 20 s and
fails with a bare ConnectionError (and Ray's C++ lines on stderr). So, before `ray.init`: the cluster's dashboard is
asked once with the token as Ray reads it (auth.py), which turns a missing or wrong token into one error line
naming what to set; and when a token is set and `RAY_AUTH_MODE` is not, token mode is turned on for this process,
as Ray itself does for `auto` (the variable, and Ray's config read again when Ray is already imported). An explicit
`RAY_AUTH_MODE` is left as it is. Ray is imported only here and in placement.py, only when used.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import httpx

from .. import constants as C
from ..config.schema import ServeSpec
from ..errors import ConfigError, ServerError
from .auth import HOW_TO_SET, find_token, refusal
from .discovery import cluster_address, dashboard_url


def connect(specs: Sequence[ServeSpec]) -> Any:
    """`ray`, connected to the one cluster the roles name (serve.ray_address, else $RAY_ADDRESS)."""
    addresses = {cluster_address(s) for s in specs}
    if len(addresses) > 1:
        raise ServerError(
            f"the roles name different Ray clusters ({', '.join(map(str, addresses))}): serve one at a time"
        )
    address = addresses.pop() if addresses else None
    if not address:
        raise ServerError(
            f"serve.cluster ray needs the cluster's address: set {C.RAY_ADDRESS_ENV} or serve.ray_address"
        )
    _reachable(address)
    _authenticate(dashboard_url(specs[0], "serve"))
    try:
        import ray
    except ImportError:
        raise ServerError("serve.cluster ray needs Ray: pip install 'rmbench-client[ray]'") from None
    # Ray warns that a restartable detached actor dies with its placement group: `stop` removes both on purpose
    logging.getLogger("ray.actor").setLevel(logging.ERROR)
    if not ray.is_initialized():
        try:
            with warnings.catch_warnings():
                # Ray 2.52's tip that replicas without GPUs will see them in future releases: ours hide them
                # themselves (replica), whatever the release does
                warnings.filterwarnings("ignore", "Tip: In future versions of Ray", FutureWarning)
                ray.init(address=address, namespace=C.RAY_NAMESPACE, logging_level=logging.WARNING, log_to_driver=False)
        except Exception as exc:  # ConnectionError, version mismatch, AuthenticationError: Ray raises several kinds
            if type(exc).__name__ == "AuthenticationError":
                raise ConfigError(f"the Ray cluster at {address} requires a token: {HOW_TO_SET}") from None
            raise ServerError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
    return ray


def _reachable(address: str) -> None:
    """A quick TCP connect to the cluster's address: `ray.init` retries an absent cluster for minutes."""
    host, _, port = address.split("://")[-1].rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=C.RAY_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ServerError(f"cannot connect to the Ray cluster at {address}: {exc}") from None


def _authenticate(dashboard: str) -> None:
    """A missing or refused token as one ConfigError (the dashboard asked once, when it answers); token mode on
    for this process when a token is set and `RAY_AUTH_MODE` is not."""
    token = find_token()
    mode = os.environ.get(C.RAY_AUTH_MODE_ENV)
    if mode == "token" and token is None:
        raise ConfigError(f"{C.RAY_AUTH_MODE_ENV}=token and no token is set: {HOW_TO_SET}")
    try:
        with httpx.Client(timeout=C.RAY_CONNECT_TIMEOUT_S, trust_env=False) as client:
            status = client.get(f"{dashboard}/api/v0/nodes", params={"limit": "1"},
                                headers=token.headers() if token else None).status_code  # fmt: skip
    except httpx.HTTPError:
        status = 0  # no dashboard there (it is not needed to serve): ray.init says what it finds
    if (refused := refusal(status, f"the Ray dashboard {dashboard}", token)) is not None:
        raise refused
    if token is not None and mode is None:
        os.environ[C.RAY_AUTH_MODE_ENV] = "token"  # what Ray does for a local cluster it finds: this process only
        raylet = sys.modules.get("ray._raylet")
        if raylet is not None:  # Ray imported already: its config read the environment then
            raylet.Config.initialize("")
