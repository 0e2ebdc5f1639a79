"""Secrets kept out of every message and every file the process makes.

Two kinds. The secrets this process has read (API keys from the environment, a Ray cluster's token, a URL's
password: `remember`, `remember_url`) are masked wherever they appear, even where a server or proxy echoes a
request's headers in its error text ("bad request from Bearer sk-..."). And the credentials a URL carries (its
userinfo, `http://user:password@gateway`, which the HTTP clients send as Basic auth, and the values of its query
parameters whose names say they are secret, `?api_key=`, `?token=`) are masked by their place in any URL
(`masked_url`), read or not. The run still uses a URL as given; only what is written or said of it is masked:
every deliberate error's message passes `hidden` (errors.RmbError), an endpoint prints as its masked URL
(backends.base.Endpoint), and the recorded URLs (samples, store, summary, config.yaml, the stamp) are masked ones.

What the client records of a run (its config, the command that made it: results/stamp.py) holds no secret either:
`masked` hides, besides the above, the values of command-line flags whose names say they are secret (a server's
`extra_args: [--api-key, ...]`). The config's keys hold no secret by design: a key is named by the variable that
holds it (`api_key_env: MY_KEY`), which is kept.
"""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

MIN_LENGTH = 8  # a shorter value would hide ordinary words; keys and tokens are far longer
MASK = "<secret>"
_known: set[str] = set()
# a word of a parameter's or flag's name that makes it a secret's (`access_token`, `--hf-token`, `X-Api-Key`, `sig`),
# as a whole word: `--max-num-batched-tokens` and `--tokenizer` are no secrets
SECRET_WORDS = frozenset(
    (
        "key", "apikey", "token", "secret", "password", "passwd", "pwd", "credential", "credentials", "auth",
        "authorization", "signature", "sig", "session",
    )
)  # fmt: skip
URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+")  # any scheme: http, https, ray, redis, ...


def remember(secret: str) -> str:
    """Hide `secret` from every later message; returns it unchanged."""
    if len(secret) >= MIN_LENGTH:
        _known.add(secret)
    return secret


def remember_url(url: str) -> str:
    """Hide what `url` carries (its password, its Basic auth header's value as a server might echo it, its secret
    query parameters' values) from every later message, wherever it appears apart from the URL; returns `url`
    unchanged."""
    parts = urlsplit(url)
    if parts.password is not None:
        password = unquote(parts.password)
        remember(password)
        remember(base64.b64encode(f"{unquote(parts.username or '')}:{password}".encode()).decode())
    for name, eq, value in (p.partition("=") for p in parts.query.split("&")):
        if eq and secret_name(unquote_plus(name)):
            remember(unquote_plus(value))
    return url


def hidden(text: str) -> str:
    """`text` with the credentials of every URL in it masked (`masked_url`), and each remembered secret."""
    if "://" in text:  # URLs first: a secret masked inside one would end it early ("<" ends a URL in text)
        text = URL.sub(lambda m: masked_url(m[0]), text)
    for secret in tuple(_known):  # a copy: another thread may remember one meanwhile
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def secret_name(name: str) -> bool:
    """Whether a query parameter or a flag by this name holds a secret; one that names an environment variable
    (`--api-key-env`) holds no secret but the variable's name."""
    words = re.split(r"[-_.]", name.lower().lstrip("-"))
    return words[-1] != "env" and not SECRET_WORDS.isdisjoint(words)


def _masked_parameter(part: str) -> str:
    """One `name=value` of a query, its value masked when its name says it is a secret."""
    name, eq, _ = part.partition("=")
    return f"{name}={MASK}" if eq and secret_name(unquote_plus(name)) else part


def masked_url(url: str) -> str:
    """The URL with its user information and the values of its secret-named query parameters masked, every other
    byte as it was; a URL with neither, as it was."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL after all (an unclosed IPv6 bracket): masked whole rather than kept
        return MASK
    query = "&".join(_masked_parameter(p) for p in parts.query.split("&"))
    if "@" not in parts.netloc and query == parts.query:
        return url
    # the host is after the last "@": a password may hold an unescaped one
    netloc = f"{MASK}@{parts.netloc.rsplit('@', 1)[1]}" if "@" in parts.netloc else parts.netloc
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def masked_args(args: list[str]) -> list[str]:
    """Command-line arguments masked: each text (`hidden`), and the value of a secret-named flag (`--api-key
    VALUE`, `--api-key=VALUE`)."""
    out: list[str] = []
    for i, arg in enumerate(args):
        flag, eq, _ = arg.partition("=")
        if eq and flag.startswith("-") and secret_name(flag):
            out.append(f"{flag}={MASK}")
        elif i > 0 and args[i - 1].startswith("-") and "=" not in args[i - 1] and secret_name(args[i - 1]):
            out.append(MASK)
        else:
            out.append(hidden(arg))
    return out


def masked(value: Any) -> Any:
    """JSON-like data (a config as a mapping) with no secret in it: every text masked, a list of strings as
    command-line arguments (a server's `extra_args`)."""
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return masked_args(value) if all(isinstance(v, str) for v in value) else [masked(v) for v in value]
    return hidden(value) if isinstance(value, str) else value
