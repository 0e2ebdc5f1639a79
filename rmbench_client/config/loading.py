"""From a YAML file, a mapping and the command line's overrides to one checked RunConfig (schema.py), and back to YAML
for the run directory.

Precedence: defaults < YAML file < environment < CLI flags (only flags actually given override). YAML is read with
`yaml.safe_load` and is data only; an error names the file (or the source) and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import yaml

from ..errors import ConfigError, located
from ..redaction import shown
from .schema import MAIN_ROLE, RoleConfig, RunConfig


def validated(data: dict[str, Any], source: str) -> RunConfig:
    """`RunConfig.from_data(data)`, or a ConfigError that names the source and the key:
    "<source>: roles.reward.endpoints: Expected `array` of length >= 1"."""
    try:
        return RunConfig.from_data(data)
    except msgspec.ValidationError as err:
        where, what = located(str(err))
        roles = data.get("roles")
        if "$.roles[...]" in str(err) and isinstance(roles, dict):  # msgspec does not name a mapping's key
            for name, role in roles.items():
                try:
                    RoleConfig.from_data(role)
                except msgspec.ValidationError as inner:
                    inside, what = located(str(inner))
                    where = ".".join(p for p in ("roles", name, inside) if p)
                    break
        if where.endswith(".endpoints") and what.startswith("Invalid enum value"):  # a string other than "ray"
            what = f"expected a list of URLs, or ray (the replicas on a Ray cluster); got {what.split(' ', 3)[-1]}"
        raise ConfigError(f"{source}: {where or '(top level)'}: {what}") from None


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The YAML file as a dict, or a ConfigError naming the file."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except OSError as exc:  # a directory, a file without read permission
        raise ConfigError(f"{p}: config file cannot be read ({exc.strerror or exc})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{p}:{where} not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: a config must be a mapping of keys to values")
    return data


def _set(data: dict[str, Any], dotted: str, value: Any, source: str) -> None:
    """data["a"]["b"]["c"] = value for "a.b.c", each mapping on the way copied (the caller's stays as it was) or
    made; a value on the way that is no mapping is an error, never replaced."""
    *path, last = dotted.split(".")
    for key in path:
        inner = data.get(key)
        if inner is not None and not isinstance(inner, Mapping):  # None: absent, or an empty YAML section
            raise ConfigError(f"{source}: {dotted}: {key} is not a mapping in the config")
        data[key] = dict(inner or {})
        data = data[key]
    data[last] = value


def config_of(data: Mapping[str, Any], overrides: Mapping[str, Any] | None, source: str) -> RunConfig:
    """The checked config of `data` (a YAML file's, or a mapping given to the API) with `overrides` over it: dotted
    keys ("roles.reward.endpoints") set nested values; None values are ignored (only flags actually given
    override). Without a `model`, a run is named after the served model of its main role. Errors name `source`."""
    data = dict(data)
    for key, value in (overrides or {}).items():
        if value is not None:
            _set(data, key, value, source)
    if "model" not in data:
        role = (data.get("roles") or {}).get(MAIN_ROLE.get(str(data.get("type", "reward")), ""), {})
        if not isinstance(role, Mapping) or not role.get("served_model"):
            raise ConfigError(
                f"{source}: no model given (set 'model' in the config, or pass --model or --served-model)"
            )
        data["model"] = role["served_model"]
    return validated(data, source)


def load_config(path: str | Path | None, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    """The config of an optional YAML file with the command line's `overrides` (`config_of`)."""
    return config_of(read_yaml(path) if path else {}, overrides, str(path) if path else "command line")


def dump_config(cfg: RunConfig) -> str:
    """The config as used, for the run directory (keys come from the environment and are never stored; a URL's
    credentials are masked: redaction.shown)."""
    return yaml.safe_dump(_masked(cfg.to_data(exclude_none=True)), sort_keys=False)


def _masked(data: Any) -> Any:
    if isinstance(data, str):
        return shown(data) if "://" in data else data
    if isinstance(data, dict):
        return {k: _masked(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_masked(v) for v in data]
    return data
