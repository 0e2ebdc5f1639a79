"""A Ray cluster's authentication token, found as Ray itself finds it, and what a refusal means.

Ray's token authentication (Ray 2.52 and later; `ray start --head` turns it on when a token exists from 2.59 on,
KubeRay's `authOptions: {mode: token}`) makes the dashboard's state API answer 401 without
`Authorization: Bearer <token>` and 403 with a wrong one, and the cluster's GCS refuse a driver without it. The
token is read from `RAY_AUTH_TOKEN`, else the file `RAY_AUTH_TOKEN_PATH` names, else `~/.ray/auth_token`: the
order of Ray's own loader, so whatever lets `ray` reach the cluster lets the client reach it too.

The token is a secret: it is never logged, printed or written; `Token`'s repr hides it, and every message names
only where it came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import constants as C
from ..errors import ConfigError
from ..redaction import remember

HOW_TO_SET = (
    f"set {C.RAY_AUTH_TOKEN_ENV} to the cluster's token (or {C.RAY_AUTH_TOKEN_PATH_ENV} to a file holding it, or "
    f"write it to {C.RAY_AUTH_TOKEN_DEFAULT_PATH}; `ray get-auth-token` on the head prints it)"
)


@dataclass(frozen=True)
class Token:
    """A cluster token and where it was found (`source`, safe to show); the value never appears in a repr."""

    value: str = field(repr=False)
    source: str

    def __post_init__(self) -> None:
        remember(self.value)  # never in a message, even where the dashboard echoes it

    def headers(self) -> dict[str, str]:
        """The HTTP header Ray's dashboard reads the token from."""
        return {"Authorization": f"Bearer {self.value}"}


def find_token(environ: Mapping[str, str] | None = None, home: Path | None = None) -> Token | None:
    """The token as Ray reads it (`RAY_AUTH_TOKEN`, the file at `RAY_AUTH_TOKEN_PATH`, `~/.ray/auth_token`), or
    None when none is set. A `RAY_AUTH_TOKEN_PATH` that cannot be read is a ConfigError naming the path."""
    env = os.environ if environ is None else environ
    if value := env.get(C.RAY_AUTH_TOKEN_ENV, "").strip():
        return Token(value, C.RAY_AUTH_TOKEN_ENV)
    if named := env.get(C.RAY_AUTH_TOKEN_PATH_ENV):
        path = Path(named).expanduser()
        try:
            value = path.read_text().strip()
        except OSError as exc:
            raise ConfigError(
                f"{C.RAY_AUTH_TOKEN_PATH_ENV} names {path}, which cannot be read ({exc.strerror})"
            ) from None
        if not value:
            raise ConfigError(f"{C.RAY_AUTH_TOKEN_PATH_ENV} names {path}, which is empty")
        return Token(value, f"{C.RAY_AUTH_TOKEN_PATH_ENV} ({path})")
    default = (home or Path.home()) / Path(C.RAY_AUTH_TOKEN_DEFAULT_PATH.removeprefix("~/"))
    try:
        value = default.read_text().strip()
    except OSError:  # no token file: a cluster without authentication
        return None
    return Token(value, str(default)) if value else None


def refusal(status: int, where: str, token: Token | None) -> ConfigError | None:
    """The one-line error for a 401 (no token sent) or 403 (a token refused) from `where`; None otherwise."""
    if status == 401:
        return ConfigError(f"{where} requires Ray's token authentication and no token is set: {HOW_TO_SET}")
    if status == 403:
        given = f"the token from {token.source}" if token else "the token sent"
        return ConfigError(f"{where} refused {given}: it is not this cluster's token; {HOW_TO_SET}")
    return None
