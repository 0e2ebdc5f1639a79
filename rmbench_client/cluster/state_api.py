"""One read of a Ray cluster's state API (the dashboard's `/api/v0/actors`, `/api/v0/nodes`) over HTTP, typed.

An answer is used only when it is whole: Ray's state API cuts a list at its data source (`total` above
`num_after_truncation`) or at its own limit (`num_filtered` above the rows sent), and says when a source failed
(`partial_failure_warning`). A list cut short would make the pool drop replicas that are alive, so such an answer
is an `EndpointError`, a failed read: the pool keeps its last complete list (pool/endpoint_pool.py). A dashboard that
answers anything but the state API's JSON (an HTML page of a proxy or a login, garbage) is one `EndpointError`
naming its URL; a 401 or 403 is the `ConfigError` of auth.py naming what to set. The cluster's token is sent
when one is set (auth.find_token) and never shown.

The answers of the oldest and newest Ray release the project supports are in tests/recorded/.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar
from urllib.parse import urlparse

import httpx
import msgspec

from .. import constants as C
from ..backends.session import ssl_context
from ..errors import EndpointError
from .auth import find_token, refusal


class Actor(msgspec.Struct, kw_only=True):
    """What the state API says of one actor (the fields read here)."""

    name: str | None = None
    state: str
    node_id: str | None = None
    repr_name: str | None = None
    num_restarts: int | str = 0  # the API sends it as a string


class Node(msgspec.Struct, kw_only=True):
    """What the state API says of one node (the fields read here)."""

    node_id: str
    node_ip: str | None = None
    state: str = ""


Row = TypeVar("Row", Actor, Node)


class _Listing(msgspec.Struct, Generic[Row]):
    result: list[Row]
    total: int | None = None
    num_after_truncation: int | None = None
    num_filtered: int | None = None
    partial_failure_warning: str | None = None


class _Data(msgspec.Struct, Generic[Row]):
    result: _Listing[Row]


class _Answer(msgspec.Struct, Generic[Row]):
    data: _Data[Row]
    result: bool = True
    msg: str = ""


_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {
    Actor: msgspec.json.Decoder(_Answer[Actor]),
    Node: msgspec.json.Decoder(_Answer[Node]),
}


def client_for(url: str) -> httpx.AsyncClient:
    """An HTTP client for the dashboard at `url` (TLS verified against certifi's bundle)."""
    # a proxy from the environment must not stand between the client and a cluster on this machine
    loopback = urlparse(url).hostname in ("127.0.0.1", "localhost", "::1")
    return httpx.AsyncClient(timeout=C.RAY_DISCOVERY_TIMEOUT_S, trust_env=not loopback, verify=ssl_context(True))


def filters(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """The state API's query parameters for `key = value` filters (applied by the cluster, not here)."""
    return {
        "filter_keys": [k for k, _ in pairs],
        "filter_predicates": ["="] * len(pairs),
        "filter_values": [v for _, v in pairs],
    }


async def read(
    client: httpx.AsyncClient, dashboard: str, kind: type[Row], path: str, params: Mapping[str, str | list[str]]
) -> list[Row]:
    """The rows of one state API list (`path`, such as "actors"), whole, or an error naming the dashboard. The
    token is found on each read: a token rotated on the cluster and in the environment is picked up."""
    url = f"{dashboard}/api/v0/{path}"
    token = find_token()
    query = {**params, "limit": str(C.RAY_STATE_API_LIMIT), "detail": "true"}
    try:
        response = await client.get(url, params=query, headers=token.headers() if token else None)
    except httpx.HTTPError as exc:
        raise EndpointError(f"Ray state API {dashboard} is not reachable ({type(exc).__name__}: {exc})") from None
    if (refused := refusal(response.status_code, f"the Ray dashboard {dashboard}", token)) is not None:
        raise refused
    if response.status_code != 200:
        raise EndpointError(f"Ray state API {url} answered {response.status_code}: {_said(response.content)}")
    try:
        answer: _Answer[Row] = _DECODERS[kind].decode(response.content)
    except msgspec.ValidationError as exc:  # JSON, not of the state API's shape
        raise EndpointError(f"Ray state API {url} answered JSON of another shape ({exc})") from None
    except msgspec.DecodeError:  # not JSON: a proxy's or a login's HTML page, garbage
        kind_of = response.headers.get("content-type", "no content type")
        raise EndpointError(
            f"Ray state API {url} answered something that is not the state API's JSON ({kind_of}: "
            f"{_said(response.content)!r}): is {dashboard} the cluster's dashboard?"
        ) from None
    if not answer.result:
        raise EndpointError(f"Ray state API {url} failed: {answer.msg[:200]}")
    listing = answer.data.result
    sent = len(listing.result)
    if listing.partial_failure_warning:
        raise EndpointError(f"Ray state API {url} answered a partial list: {listing.partial_failure_warning[:200]}")
    if listing.total is not None and listing.num_after_truncation is not None:
        if listing.total > listing.num_after_truncation:
            raise EndpointError(f"Ray state API {url} cut the list at its source ({listing.num_after_truncation} "
                                f"of {listing.total} {path}): not read as complete")  # fmt: skip
    if sent < listing.num_filtered if listing.num_filtered is not None else sent >= C.RAY_STATE_API_LIMIT:
        raise EndpointError(f"Ray state API {url} sent {sent} of {listing.num_filtered or 'more'} {path} (its "
                            "limit): not read as complete")  # fmt: skip
    return listing.result


def _said(body: bytes) -> str:
    """The start of an answer's body, for an error line (one line)."""
    return " ".join(body[:200].decode(errors="replace").split())


__all__ = ["Actor", "Node", "client_for", "filters", "read"]
