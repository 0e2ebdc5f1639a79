"""One typed evaluation config, read by both `rmbench-client run` and `make serve`: its sections, each checked as it
is read (loading.py reads the YAML file and the command line's overrides into it).

Unknown keys are errors. The sections are msgspec Structs: pydantic's import and model building took about 0.14 s
of CPU at the start of every run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlparse

import msgspec
from msgspec import Meta, field

from .. import constants as C
from ..errors import ConfigError
from ..redaction import remember
from .gpu_layout import replica_gpu_problem

ModelType = Literal["reward", "dpo", "judge", "baseline", "prm"]
Role = Literal["reward", "policy", "reference", "judge", "prm"]
ROLES_BY_TYPE: dict[str, tuple[Role, ...]] = {  # the roles a model type may use (see RunConfig.roles_used)
    "reward": ("reward",),
    "dpo": ("policy", "reference"),
    "judge": ("judge",),
    "baseline": (),
    # its own role: a PRM's server is started unlike a reward model's (the step tag's pooler, a generate runner)
    "prm": ("prm",),
}
# the role a run is named after by default
MAIN_ROLE = {"reward": "reward", "dpo": "policy", "judge": "judge", "prm": "prm"}


Positive = Annotated[float, Meta(gt=0)]
AtLeastOne = Annotated[int, Meta(ge=1)]


class Strict(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A config section: unknown keys are errors, values are checked as they are read, nothing changes after.
    Sections say `frozen=True, kw_only=True` again: msgspec inherits them, mypy reads them per class."""

    @classmethod
    def from_data(cls, data: Any) -> Self:
        """The section from plain data (YAML's, the flags'); a msgspec.ValidationError when it does not fit.
        Lax as YAML and flags need: "8" is read as 8."""
        return msgspec.convert(data, cls, strict=False)

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields replaced (checked again only by `__post_init__`, as a copy is made in code)."""
        return msgspec.structs.replace(self, **changes)

    def to_data(self, exclude_none: bool = False) -> dict[str, Any]:
        """Plain, JSON-compatible data; without the keys whose value is None when asked."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        if exclude_none:
            data = _without_none(data)
        return data


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


class ServeSpec(Strict, frozen=True, kw_only=True):
    """How `make serve` starts the server(s) behind a role's endpoints: one server per endpoint URL on this machine
    (`cluster: local`), or `replicas` Ray actors on a Ray cluster, each reserving `resources` on one node."""

    engine: Literal["vllm", "vllm-cpu", "tgi"] = "vllm"
    path: str  # local model directory (relative to the config's repository root) or hub id
    max_model_len: int = 4096
    dtype: str = "auto"
    gpus: list[str] | None = None  # CUDA_VISIBLE_DEVICES per endpoint, e.g. ["0", "1"] or ["0,1"]
    cpus: list[str] | None = None  # CPU cores per endpoint, e.g. ["0", "1"] or ["0-3", "4-7"] (taskset's list format)
    data_parallel_size: int = 1
    extra_args: list[str] = field(default_factory=list)
    cluster: Literal["local", "ray"] = "local"
    ray_address: str | None = None  # the cluster (`ray start`'s address); else $RAY_ADDRESS
    ray_dashboard: str | None = None  # its state API; else $RAY_API_SERVER_ADDRESS, else port 8265 of ray_address
    replicas: AtLeastOne = 1
    resources: dict[str, Annotated[float, Meta(gt=0)]] | None = None  # per replica, in Ray's names: {GPU: 4}

    def __post_init__(self) -> None:
        if self.cluster == "local":
            given = [k for k in ("ray_address", "ray_dashboard", "resources") if getattr(self, k) is not None]
            if self.replicas != 1:
                given.append("replicas")
            if given:
                raise ValueError(f"{', '.join(given)} need cluster: ray (locally, one server per endpoint URL)")
            return
        if self.engine == "tgi":
            raise ValueError("engine tgi runs in docker on this machine only: use engine vllm or vllm-cpu on Ray")
        if self.gpus is not None or self.cpus is not None:
            raise ValueError("gpus and cpus are for cluster: local; on Ray a replica reserves them in resources")
        if self.resources is not None and not self.resources:
            raise ValueError("resources is empty: name what one replica reserves, such as {GPU: 4} or {CPU: 8}")
        if self.ray_dashboard is not None and urlparse(self.ray_dashboard).scheme not in ("http", "https"):
            raise ValueError(f"ray_dashboard {self.ray_dashboard!r} is not an http(s) URL")
        gpus = self.replica_resources().get("GPU", 0.0)
        if problem := replica_gpu_problem(self.engine, gpus, self.extra_args, self.data_parallel_size):
            raise ValueError(problem)

    def replica_resources(self) -> dict[str, float]:
        """What one replica reserves on its node (Ray's resource names)."""
        return dict(self.resources or C.RAY_REPLICA_RESOURCES)


class RoleConfig(Strict, frozen=True, kw_only=True):
    """Where one model is served: its name on the server, its endpoints, and how to reach them."""

    served_model: str
    # the servers' URLs, or "ray": the replicas `serve` registered on the Ray cluster, read at run time
    endpoints: Annotated[list[str], Meta(min_length=1)] | Literal["ray"]
    backend: Literal["vllm", "tgi", "tei", "sglang", "openai"] = "vllm"
    api_key_env: str | None = None  # name of the environment variable holding this role's key
    concurrency: AtLeastOne = C.MAX_CONCURRENCY_PER_ENDPOINT
    verify_tls: bool = True
    serve: ServeSpec | None = None

    def __post_init__(self) -> None:
        on_ray = self.serve is not None and self.serve.cluster == "ray"
        if self.endpoints == "ray":
            if self.serve is not None and not on_ray:
                raise ValueError("endpoints: ray needs serve.cluster: ray (or no serve section)")
            return
        if on_ray:
            raise ValueError(
                "serve.cluster ray: set endpoints: ray (the run reads the replicas' URLs from the cluster)"
            )
        for url in self.endpoints:
            parsed = urlparse(url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ValueError(f"endpoint {url!r} is not an http(s) URL")
            try:
                _ = parsed.port  # read only when asked: 99999 or "abc" was a traceback in the HTTP client later
            except ValueError as exc:
                raise ValueError(f"endpoint {url!r} is not an http(s) URL ({exc})") from None
            if parsed.path.rstrip("/").endswith("/v1"):  # the client adds /v1/... itself: /v1/v1/models would 404
                root = url.rstrip("/")[: -len("/v1")]
                raise ValueError(f"endpoint {url!r} ends in /v1: give the server's root, {root!r}")

    @property
    def on_ray(self) -> bool:
        """Whether the endpoints are the replicas on a Ray cluster, found at run time."""
        return self.endpoints == "ray"

    def urls(self) -> list[str]:
        """The listed endpoint URLs; for `endpoints: ray` none (cluster.discovery finds them)."""
        return [] if isinstance(self.endpoints, str) else list(self.endpoints)

    def endpoint_count(self) -> int:
        """How many endpoints the role has, or expects on the cluster (its replicas)."""
        if isinstance(self.endpoints, str):
            return self.serve.replicas if self.serve is not None else 1
        return len(self.endpoints)

    def api_key(self, role: str = "") -> str | None:
        """The key from the environment: the role's own variable (which must be set), else RMBENCH_API_KEY."""
        where = f"role {role}: " if role else ""
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:  # never fall back to RMBENCH_API_KEY: that key may belong to another host
                raise ConfigError(f"{where}api_key_env names {self.api_key_env}, which is not set in the environment")
            return remember(_header_safe(key, self.api_key_env, where))
        key = os.environ.get(C.API_KEY_ENV) or None
        return remember(_header_safe(key, C.API_KEY_ENV, where)) if key else None


def _header_safe(key: str, variable: str, where: str) -> str:
    """A key that can go into an HTTP header as it is: a CR or LF would end the header (and inject others), and
    HTTP headers carry Latin-1 only. The error names the variable, never the key."""
    if "\r" in key or "\n" in key:
        raise ConfigError(
            f"{where}{variable} holds a line break (CR or LF): remove it (a trailing newline from a file?)"
        )
    try:
        key.encode("latin-1")
    except UnicodeEncodeError:
        raise ConfigError(f"{where}{variable} holds characters outside Latin-1, which no HTTP header carries") from None
    return key


class RewardOptions(Strict, frozen=True, kw_only=True):
    template: str = "server"  # "server" (chat template applied by the server), "ids", or a Jinja file path
    head_index: int = 0  # which output of a multi-output head
    head_weights: list[float] | None = None  # combine all outputs with these weights instead
    # texts (or token ids) of consecutive prompts sent in one request, a prompt never split: more cost the client
    # less per sequence, but a slow server answers each later (client.read_timeout; docs/performance.md)
    texts_per_request: AtLeastOne = C.UNITS_PER_REQUEST


class DpoOptions(Strict, frozen=True, kw_only=True):
    reward: Literal["ratio", "sum", "avg", "norm"] = "ratio"
    # "server", "auto" (the policy's tokenizer_config.json, checked against the server) or a template file;
    # TGI cannot template a full conversation, so it needs a client-side one
    template: str = "server"


class JudgeOptions(Strict, frozen=True, kw_only=True):
    max_tokens: AtLeastOne = C.JUDGE_MAX_TOKENS  # room for the reasoning before the verdict
    # vLLM's thinking_token_budget (needs the server's --reasoning-parser and --reasoning-config); None: not sent
    reasoning_budget: Annotated[int, Meta(ge=0)] | None = C.JUDGE_REASONING_BUDGET
    order: Literal["random", "both"] = "random"  # one seeded random order per pair, or both orders
    # the project's prompts, reward-bench's (read from its installed package) or JudgeBench's (arena-hard, vanilla):
    # model_kinds/judge_prompts.py
    prompt: Literal["project", "reward-bench", "judgebench", "judgebench-vanilla"] = "project"
    seed: int = 0  # the answer order's seed: apart from the bootstrap's, so a new bootstrap seed re-judges nothing
    samples: AtLeastOne = C.JUDGE_SAMPLES  # answers per question (the request's `n`), read as a majority verdict
    temperature: Annotated[float, Meta(ge=0)] = C.JUDGE_TEMPERATURE

    def __post_init__(self) -> None:
        if self.samples > 1 and self.temperature == 0:
            raise ValueError("judge.samples above 1 needs judge.temperature above 0 (greedy samples are all alike)")


class PrmOptions(Strict, frozen=True, kw_only=True):
    """Process benchmarks and process reward models (`prm.*`): how a PRM's per-step scores are read
    (model_kinds/prm.py, prm_critic.py) and the threshold the benchmarks judge a step by."""

    # a step scored above it is judged correct (PRMBench's rule); ProcessBench's wrong step is the first one not
    threshold: Annotated[float, Meta(ge=0, le=1)] = C.PRM_THRESHOLD
    # pooling: vLLM's native PRM (/pooling, step-tag pooling); logprobs: a causal LM's next-token probabilities of
    # good_token against bad_token at each step tag; critic: a chat model names the earliest wrong step
    method: Literal["pooling", "logprobs", "critic"] = "pooling"
    step_tag: str | None = None  # after every step; None: C.PRM_STEP_TAG (pooling), C.PRM_LOGPROB_STEP_TAG
    step_tag_id: int | None = None  # pooling: the server's step_tag_id (`serve` passes it; `run` checks it)
    system: str | None = C.PRM_SYSTEM  # pooling: the system message (Qwen2.5-Math-PRM's model card); None: none
    # logprobs: Math-Shepherd's text (the tag after each step), or RLHFlow's conversation (each step a user turn,
    # good_token the assistant's answer to the earlier ones; the score is read where the assistant answers)
    layout: Literal["text", "chat"] = "text"
    good_token: str = C.PRM_GOOD_TOKEN  # logprobs
    bad_token: str = C.PRM_BAD_TOKEN
    max_tokens: AtLeastOne = C.PRM_CRITIC_MAX_TOKENS  # critic: room for its review
    # a benchmark of whole responses (RewardMATH): how a response's step scores become one, as RewardMATH's
    # --prm_function (benchmarks/shared/step_aggregates.py); None: min
    function: Literal["min", "max", "prod", "geometric_mean", "mean", "mean_logit", "mean_odd", "last"] | None = None

    def aggregation(self) -> str:
        """The step aggregation in use: the configured one, else min."""
        return self.function or C.PRM_FUNCTION

    def tag(self) -> str:
        """The step tag in use: the configured one, else the method's default."""
        if self.step_tag is not None:
            return self.step_tag
        return C.PRM_LOGPROB_STEP_TAG if self.method == "logprobs" else C.PRM_STEP_TAG


class ClientOptions(Strict, frozen=True, kw_only=True):
    rate_limit: Positive | None = None  # requests per second across the run
    connect_timeout: Positive = C.CONNECT_TIMEOUT_S
    read_timeout: Positive = C.READ_TIMEOUT_S  # between two reads of an answer
    request_timeout: Positive = C.REQUEST_TIMEOUT_S  # one whole request, its answer read: a trickle ends too
    max_retries: Annotated[int, Meta(ge=0)] = C.MAX_RETRIES
    all_down_patience: Annotated[float, Meta(ge=0)] = C.ALL_DOWN_PATIENCE_S
    rejected_grace: Annotated[float, Meta(ge=0)] = C.REJECTED_GRACE_S  # every endpoint serving another model
    endpoint_refresh: Positive = C.ENDPOINT_SOURCE_REFRESH_S  # how often a role's endpoint source is read again
    workers: AtLeastOne = C.WORKERS  # scoring processes sharing the run (run/workers.py)
    # a prompt's requests of a role on one endpoint: its scores from one server, one engine release (pool/pinning.py)
    same_endpoint_per_prompt: bool = False


class RunConfig(Strict, frozen=True, kw_only=True):
    """A whole evaluation."""

    # a name in the benchmark registry (rmbench_client/benchmarks/registry.py), or a benchmark file (NAME.yaml)
    benchmark: str = "rm-bench"
    benchmarks: list[str] | None = None  # what `suite` and `watch` run when not told (None: every one with data)
    model: str  # identity shown in reports; "baseline:NAME" selects a baseline
    type: ModelType = "reward"
    # a file or directory; else the benchmark's variable ($RMBENCH_DATA_DIR); else data/<benchmark>; else the hub
    data: str | None = None
    out: str | None = None  # run directory; default runs/<model>/<benchmark>
    limit: AtLeastOne | None = None  # first N prompts only (smoke runs)
    seed: Annotated[int, Meta(ge=0)] = 0  # the bootstrap's, baseline:random's; the judge's answer order has judge.seed
    data_fields: dict[str, str] = field(default_factory=dict)  # our field name -> the data file's (any benchmark)
    roles: dict[Role, RoleConfig] = field(default_factory=dict)
    reward: RewardOptions = field(default_factory=RewardOptions)
    dpo: DpoOptions = field(default_factory=DpoOptions)
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    prm: PrmOptions = field(default_factory=PrmOptions)
    client: ClientOptions = field(default_factory=ClientOptions)

    @classmethod
    def from_data(cls, data: Any) -> Self:
        if isinstance(data, dict) and str(data.get("model", "")).startswith("baseline:"):
            data = {**data, "type": "baseline"}  # a baseline is its own type whatever the file says
        return super().from_data(data)

    def __post_init__(self) -> None:
        from ..benchmarks.definitions import is_definition
        from ..benchmarks.registry import get  # the registry, imported late: it pulls in every benchmark's modules

        for name in (self.benchmark, *(self.benchmarks or ())):
            try:
                get(name)
            except ConfigError as exc:  # an unknown name, or a plug-in's that failed to load: says why
                if is_definition(name):  # a benchmark file's mistake names that file and its key
                    raise
                raise ValueError(str(exc)) from None
        if self.benchmarks is not None and not self.benchmarks:
            raise ValueError("benchmarks: [] names no benchmark: name one or more, or leave the key out for every one")
        missing = [r for r in self.roles_used() if r not in self.roles]
        if missing:
            raise ValueError(f"type {self.type!r} needs roles {', '.join(missing)} under 'roles'")
        if self.type == "baseline" and self.baseline not in ("random", "longer", "markdown"):
            raise ValueError(f"unknown baseline {self.model!r} (baseline:random, baseline:longer, baseline:markdown)")
        if self.out is None and (problem := model_folder_problem(self.model)):
            raise ValueError(problem)

    def roles_used(self) -> tuple[Role, ...]:
        """The roles this run talks to: DPO's reference only for the ratio reward."""
        if self.type == "dpo" and self.dpo.reward != "ratio":
            return ("policy",)
        return ROLES_BY_TYPE[self.type]

    def fits(self, process: bool, steps: bool = False) -> str | None:
        """Why this model cannot score a (process) benchmark, or None when it can: process models score each step of
        a solution (process benchmarks, and those whose responses come in steps: `steps`), the others whole
        responses; baseline:random can do both."""
        if self.type == "baseline":
            if process and self.baseline != "random":
                return f"baseline:{self.baseline} has no per-step score for a process benchmark (baseline:random has)"
            return None
        if process and self.type not in C.PROCESS_MODEL_TYPES:
            return f"model type {self.type} scores whole responses; a process benchmark needs each step scored"
        if not process and self.type in C.PROCESS_MODEL_TYPES:
            if not steps:
                return f"model type {self.type} scores the steps of a solution; this benchmark has none"
            if self.prm.method == "critic":
                return ("prm.method critic names a solution's earliest wrong step; a response's score needs every "
                        "step scored (pooling or logprobs)")  # fmt: skip
        return None

    @property
    def baseline(self) -> str:
        return self.model.removeprefix("baseline:")

    def out_dir(self) -> Path:
        """`--out`, else runs/<model>/<benchmark>: one model's benchmarks never overwrite each other."""
        from ..benchmarks.registry import name_of  # late, as in __post_init__

        if self.out:
            return Path(self.out)
        return Path(C.RUNS_DIR) / self.model.replace("/", "_").replace(":", "-") / name_of(self.benchmark)


def model_folder_problem(model: str) -> str | None:
    """Why `model` cannot name its folder under runs/ (the default run directory's parent), or None: "." or ".."
    would put its runs in runs/ itself or outside it. "org/model" is runs/org_model."""
    if model.replace("/", "_").replace(":", "-") in ("", ".", ".."):
        return f"model {model!r} cannot name a folder under {C.RUNS_DIR}/: give the run directory with --out"
    return None
