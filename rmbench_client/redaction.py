"""Secrets kept out of every message and every file the process makes.

Two kinds: the secrets this process has read (API keys from the environment, a Ray cluster's token: `remember`),
masked wherever they appear, even where a server or proxy echoes a request's headers in its error text ("bad
request from Bearer sk-..."); and the credentials a URL carries (its userinfo, `http://user:password@gateway`, which
the HTTP clients send as Basic auth, and any secret query parameter such as `?api_key=` or `?token=`), masked by
their place in any URL (`shown`, and `hidden` on any text). The run still uses the URL as given; only what is
written or said of it is masked: every deliberate error's message passes `hidden` (errors.RmbError), an endpoint
prints as its `shown` URL (backends.base.Endpoint), and the recorded URLs (samples, store, summary, config.yaml)
are the shown ones.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit

MIN_LENGTH = 8  # a shorter value would hide ordinary words; keys and tokens are far longer
MASK = "<secret>"
URL_MASK = "***"  # a URL's masked userinfo or parameter value: the URL stays a URL (config.yaml reads it back)
_known: set[str] = set()

# userinfo: everything between "scheme://" and the last "@" before the host's end (a password may hold an "@")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s?#]*@")
# a query parameter whose name says it is a secret: its value, up to the next parameter
_SECRET_PARAM = re.compile(
    r"(?i)([?&;][\w.-]*(?:key|token|secret|password|passwd|pwd|auth|authorization|sig|signature|credential|"
    r"credentials|session)=)[^&;#\s'\"]*"
)


def remember(secret: str) -> str:
    """Hide `secret` from every later message; returns it unchanged."""
    if len(secret) >= MIN_LENGTH:
        _known.add(secret)
    return secret


def remember_url(url: str) -> str:
    """Hide what `url` carries (its password, its Basic auth header's value as a server might echo it, its secret
    query parameters) from every later message, wherever it appears apart from the URL; returns `url` unchanged."""
    parts = urlsplit(url)
    if parts.password is not None:
        remember(unquote(parts.password))
        user = unquote(parts.username or "")
        remember(base64.b64encode(f"{user}:{unquote(parts.password)}".encode()).decode())
    for found in _SECRET_PARAM.finditer(url):
        value = url[found.end(1) : found.end()]
        remember(unquote(value))
    return url


def shown(url: str) -> str:
    """`url` as it may be written or said: its userinfo and secret query parameters masked."""
    return _SECRET_PARAM.sub(lambda m: m.group(1) + URL_MASK, _USERINFO.sub(r"\1" + URL_MASK + "@", url))


def hidden(text: str) -> str:
    """`text` with each remembered secret masked, and the credentials of any URL in it."""
    for secret in tuple(_known):  # a copy: another thread may remember one meanwhile
        if secret in text:
            text = text.replace(secret, MASK)
    if "://" in text or "=" in text:
        text = shown(text)
    return text
