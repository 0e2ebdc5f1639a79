"""RM-Bench: `total_dataset.json` or the per-domain `*_filtered.json` files, validated into Examples.

The domain comes from the record's `domain` field, else its id prefix (`"chat/100"`), else the file name.
Both safety files form the domain `safety`; the subdomain (safety-refuse / safety-response) is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from .constants import FILES, STYLES, TOTAL_FILE

# Accepted domain names (record field, id prefix or file stem) -> (domain, subdomain)
DOMAIN_NAMES = {domain: (domain, sub) for domain, sub in FILES.values()} | {
    sub: (domain, sub) for domain, sub in FILES.values()
}
_N_STYLES = len(STYLES)


def _domain_of(record: dict[str, Any], path: Path, where: str) -> tuple[str, str]:
    name = record.get("domain")
    if name is None and isinstance(record.get("id"), str) and "/" in record["id"]:
        name = record["id"].split("/", 1)[0]
    if name is None:
        if path.name in FILES:
            return FILES[path.name]
        raise DataError(f"{where}: no domain (no 'domain' field, no 'domain/N' id, file name not a domain file)")
    if name not in DOMAIN_NAMES:
        known = ", ".join(sorted(DOMAIN_NAMES))
        raise DataError(f"{where}: unknown domain {name!r} (known: {known})")
    return DOMAIN_NAMES[name]


def _responses(record: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = record.get(key)
    if not isinstance(value, list) or len(value) != _N_STYLES:
        got = f"{len(value)} items" if isinstance(value, list) else type(value).__name__
        raise DataError(f"{where}: '{key}' must be a list of exactly {_N_STYLES} strings, got {got}")
    for i, text in enumerate(value):
        if not isinstance(text, str):
            raise DataError(f"{where}: '{key}[{i}]' is {type(text).__name__}, expected a string")
        if not text.strip():
            raise DataError(f"{where}: '{key}[{i}]' is empty")
    return tuple(value)


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated RM-Bench example, or a DataError naming file and record."""
    record, where = check.record(record, path, index, ("id", "prompt", "chosen", "rejected"))
    if not isinstance(record["prompt"], str) or not record["prompt"].strip():
        raise DataError(f"{where}: 'prompt' must be a non-empty string")
    domain, sub = _domain_of(record, path, where)
    rid = record["id"]
    if not isinstance(rid, str | int) or isinstance(rid, bool):
        raise DataError(f"{where}: 'id' must be a string or an integer")
    ident = rid if isinstance(rid, str) and "/" in rid else f"{sub}/{rid}"
    extra = {k: v for k, v in record.items() if k not in ("id", "prompt", "chosen", "rejected", "domain")}
    return Example(
        id=ident,
        benchmark="rm-bench",
        group=domain,
        subgroup=sub,
        prompt=record["prompt"],
        chosen=_responses(record, "chosen", where),
        rejected=_responses(record, "rejected", where),
        extra=extra,
    )


def files_in(directory: Path) -> list[Path]:
    """The RM-Bench files of a directory: total_dataset.json alone if present, else every domain file."""
    total = directory / TOTAL_FILE
    if total.is_file():
        return [total]
    return [directory / name for name in FILES if (directory / name).is_file()]
