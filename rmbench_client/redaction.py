"""Secrets this process has read (API keys from the environment, a Ray cluster's token) kept out of every message it
makes: a server or proxy that echoes a request's headers in its error text ("bad request from Bearer sk-...") must
not put the key into failures.jsonl, a log line or the terminal. Every deliberate error's message passes `hidden`
(errors.RmbError), so no writer has to remember it."""

from __future__ import annotations

MIN_LENGTH = 8  # a shorter value would hide ordinary words; keys and tokens are far longer
MASK = "<secret>"
_known: set[str] = set()


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
