"""Secrets kept out of everything the client writes.

Secrets this process has read (API keys from the environment, a Ray cluster's token) are kept out of every message
it makes: a server or proxy that echoes a request's headers in its error text ("bad request from Bearer sk-...")
must not put the key into failures.jsonl, a log line or the terminal. Every deliberate error's message passes
`hidden` (errors.RmbError), so no writer has to remember it.

What the client records of a run (its config, the command that made it: results/stamp.py, config.yaml) holds no
secret either, read or not: `masked` hides a URL's credentials (`https://user:pass@host`) and the values of its
query parameters and of command-line flags (a server's `extra_args`) whose names say they are secret (`?token=`,
`--api-key`), besides the secrets read. The config's keys hold no secret by design: a key is named by the variable
that holds it (`api_key_env: MY_KEY`), which is kept.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MIN_LENGTH = 8  # a shorter value would hide ordinary words; keys and tokens are far longer
MASK = "<secret>"
_known: set[str] = set()
# a word of a parameter's or flag's name that makes it a secret's (`access_token`, `--hf-token`, `X-Api-Key`, `sig`),
# as a whole word: `--max-num-batched-tokens` and `--tokenizer` are no secrets
SECRET_WORDS = frozenset(
    ("key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials", "auth", "signature", "sig")
)
URL = re.compile(r"https?://[^\s'\"<>]+")


def remember(secret: str) -> str:
    """Hide `secret` from every later message; returns it unchanged."""
    if len(secret) >= MIN_LENGTH:
        _known.add(secret)
    return secret


def hidden(text: str) -> str:
    """`text` with each remembered secret masked."""
    for secret in tuple(_known):  # a copy: another thread may remember one meanwhile
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def secret_name(name: str) -> bool:
    """Whether a query parameter or a flag by this name holds a secret; one that names an environment variable
    (`--api-key-env`) holds no secret but the variable's name."""
    words = re.split(r"[-_.]", name.lower().lstrip("-"))
    return words[-1] != "env" and not SECRET_WORDS.isdisjoint(words)


def masked_url(url: str) -> str:
    """The URL with its user information and the values of its secret-named query parameters masked; a URL with
    neither, as it was."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL after all (an unclosed IPv6 bracket): masked whole rather than kept
        return MASK
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    secret = any(secret_name(k) for k, _ in pairs)
    if "@" not in parts.netloc and not secret:
        return url
    netloc = f"{MASK}@{parts.netloc.rsplit('@', 1)[1]}" if "@" in parts.netloc else parts.netloc
    query = urlencode([(k, MASK if secret_name(k) else v) for k, v in pairs], safe="<>") if secret else parts.query
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def masked_text(text: str) -> str:
    """A text with every URL in it masked (`masked_url`) and every remembered secret hidden."""
    return hidden(URL.sub(lambda m: masked_url(m[0]), text))


def masked_args(args: list[str]) -> list[str]:
    """Command-line arguments masked: each text (`masked_text`), and the value of a secret-named flag (`--api-key
    VALUE`, `--api-key=VALUE`)."""
    out: list[str] = []
    for i, arg in enumerate(args):
        flag, eq, _ = arg.partition("=")
        if eq and flag.startswith("-") and secret_name(flag):
            out.append(f"{flag}={MASK}")
        elif i > 0 and args[i - 1].startswith("-") and "=" not in args[i - 1] and secret_name(args[i - 1]):
            out.append(MASK)
        else:
            out.append(masked_text(arg))
    return out


def masked(value: Any) -> Any:
    """JSON-like data (a config as a mapping) with no secret in it: every text masked, a list of strings as
    command-line arguments (a server's `extra_args`)."""
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return masked_args(value) if all(isinstance(v, str) for v in value) else [masked(v) for v in value]
    return masked_text(value) if isinstance(value, str) else value
