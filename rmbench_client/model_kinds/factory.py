"""Building a run's model kind from its config: an HTTP client per role (its own TLS setting and key), one
endpoint pool per role fed by the role's source (pool/discovery.py), every endpoint admitted by the role's identity
check (pool/admission.py), and the model kind's start-up checks on the admitted endpoints; from then on every
connection of a role is checked before it carries a request (backends/connection_check.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import httpx
from asyncio_throttle.throttler import Throttler

from .. import constants as C
from ..backends import JUDGE_BACKENDS, LOGPROB_BACKENDS, REWARD_BACKENDS
from ..backends.base import Endpoint
from ..backends.session import DeadlineClient, Session
from ..benchmarks.spec import JudgeMode
from ..config.schema import ClientOptions, RoleConfig, RunConfig
from ..errors import ConfigError
from ..pool.admission import Admission, kind_of
from ..pool.discovery import source_for
from ..pool.endpoint_pool import EndpointPool
from ..redaction import remember_url
from .base import ModelKind
from .baseline import BaselineModel
from .chat_templates import resolve_template
from .dpo import DpoModel
from .reward import RewardModel


def _connections(role: RoleConfig) -> int:
    return role.endpoint_count() * role.concurrency + 8  # every request slot, and the probes beside them


def make_transport(role: RoleConfig, options: ClientOptions) -> Session:
    """One role's connections: an aiohttp session (backends/session.py), as httpx's own pool costs ~2.5 ms of CPU
    per request at 16 connections."""
    timeouts = (options.connect_timeout, options.read_timeout)
    return Session(role.verify_tls, *timeouts, _connections(role), request_timeout=options.request_timeout)


def make_client(
    role: RoleConfig, options: ClientOptions, transport: Session, urls: list[str] | None = None
) -> httpx.AsyncClient:
    """One role's httpx client (the judge's openai client, health probes) on the role's session, so every request
    shares its pool, proxies and TLS, with the request deadline."""
    timeout = httpx.Timeout(options.read_timeout, connect=options.connect_timeout)
    # proxies come from the session (trust_env): httpx must not mount its own
    mounts = transport.httpx_mounts(role.urls() if urls is None else urls)
    via = transport.httpx_transport()
    return DeadlineClient(
        timeout=timeout, transport=via, mounts=mounts, trust_env=False, deadline=options.request_timeout
    )


def endpoints(
    name: str, role: RoleConfig, client: httpx.AsyncClient, transport: Session, urls: list[str] | None = None
) -> list[Endpoint]:
    """The role's endpoints (at `urls`, when found elsewhere than in the config: a Ray cluster's replicas); scoring
    requests go to the role's session directly."""
    key = role.api_key(name)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    listed = role.urls() if urls is None else urls
    if key and (carrying := [u for u in listed if urlsplit(u).username is not None]):
        variable = role.api_key_env or C.API_KEY_ENV
        raise ConfigError(f"role {name}: endpoint {carrying[0]} carries credentials and {variable} gives a key "
                          "too: an HTTP request sends one Authorization, give one of them")  # fmt: skip
    return [  # a URL's credentials are masked wherever it is said or written (redaction.py); requests carry them
        Endpoint(remember_url(url.rstrip("/")), role.served_model, client, headers, transport=transport)
        for url in listed
    ]


def endpoint_maker(
    name: str, role: RoleConfig, client: httpx.AsyncClient, transport: Session
) -> Callable[[str], Endpoint]:
    """How the role's pool makes an Endpoint of a URL its source lists: as `endpoints` makes the config's."""

    def make(url: str) -> Endpoint:
        try:  # checked as the config's are (a Ray role's serve section aside: its URLs come from the cluster)
            role.replace(endpoints=[url], serve=None)
        except ValueError as exc:
            raise ConfigError(f"role {name}: {exc}") from None
        (ep,) = endpoints(name, role, client, transport, [url])
        return ep

    return make


def _table(kind: str, role: str, backend: str, table: Any) -> Any:
    if backend not in table:
        raise ConfigError(f"role {role}: backend {backend!r} cannot serve a {kind} (use {', '.join(sorted(table))})")
    return table[backend]()


@dataclass(frozen=True)
class Served:
    """A run's model kind and the endpoint pools of its roles (none for a baseline)."""

    model: ModelKind
    pools: dict[str, EndpointPool]


@asynccontextmanager
async def open_model_kind(
    cfg: RunConfig, judge_mode: JudgeMode = "pairwise", process: bool = False
) -> AsyncIterator[ModelKind]:
    """The model kind of the config, its HTTP clients and pools open for the duration, checks passed; `process`:
    the benchmark scores solutions step by step (a baseline then gives per-step scores)."""
    async with open_served(cfg, judge_mode, process) as served:
        yield served.model


@asynccontextmanager
async def open_served(
    cfg: RunConfig, judge_mode: JudgeMode = "pairwise", process: bool = False
) -> AsyncIterator[Served]:
    """`open_model_kind` with the role's pools beside the model kind (what answered, what changed)."""
    if cfg.type == "baseline":
        yield Served(BaselineModel(cfg.baseline, cfg.seed, process), {})
        return
    rate = cfg.client.rate_limit
    # one request per 1/rate seconds, shared by every role: exact for fractional rates too
    throttle = Throttler(rate_limit=1, period=1.0 / rate) if rate else None
    async with AsyncExitStack() as stack:
        pools: dict[str, EndpointPool] = {}
        admissions: dict[str, Admission] = {}
        sessions: dict[str, Session] = {}
        for name in cfg.roles_used():
            role = cfg.roles[name]
            source = source_for(name, role)  # a Ray role's: the cluster's state API (cluster.discovery), no Ray import
            transport = sessions[name] = make_transport(role, cfg.client)
            stack.push_async_callback(transport.aclose)
            client = await stack.enter_async_context(make_client(role, cfg.client, transport))
            admissions[name] = Admission(name, role.backend, kind_of(cfg.type, cfg.prm.method))
            pools[name] = EndpointPool(
                name,
                concurrency=role.concurrency,
                max_retries=cfg.client.max_retries,
                all_down_patience=cfg.client.all_down_patience,
                throttle=throttle,
                source=source,
                make_endpoint=endpoint_maker(name, role, client, transport),
                admission=admissions[name],
                refresh_interval=cfg.client.endpoint_refresh,
                rejected_grace=cfg.client.rejected_grace,
            )
            stack.push_async_callback(pools[name].aclose)
            await pools[name].start()
        served = {name: a.identity or {} for name, a in admissions.items()}
        model: ModelKind
        if cfg.type == "reward":
            role = cfg.roles["reward"]
            backend = _table("reward model", "reward", role.backend, REWARD_BACKENDS)
            template = resolve_template(cfg.reward.template, role)
            model = RewardModel(pools["reward"], role, cfg.reward, backend, template, served["reward"])
        elif cfg.type == "judge":
            if cfg.roles["judge"].backend not in JUDGE_BACKENDS:
                raise ConfigError(f"role judge: needs an OpenAI-compatible chat endpoint ({', '.join(JUDGE_BACKENDS)})")
            from .judge import JudgeModel  # openai: seconds of imports that other runs never need
            from .judge_prompts import PROMPTS

            prompts = PROMPTS[cfg.judge.prompt]()
            model = JudgeModel(pools["judge"], cfg.judge, judge_mode, served["judge"], prompts)
        elif cfg.type == "prm":
            model = _prm(cfg, pools["prm"], served["prm"])
        else:
            kinds = {cfg.roles[r].backend for r in cfg.roles_used()}
            if len(kinds) > 1:
                raise ConfigError(f"policy and reference must use the same backend (got {', '.join(sorted(kinds))})")
            backend = _table("DPO policy", "policy", kinds.pop(), LOGPROB_BACKENDS)
            template = resolve_template(cfg.dpo.template, cfg.roles["policy"])
            model = DpoModel(
                pools["policy"], pools.get("reference"), cfg.dpo.reward, backend, template, cfg.dpo.template, served
            )
        await model.check()
        for pool in pools.values():  # from now on every endpoint that joins gives the role's fingerprint
            expected = model.identity["models"].get(pool.role, {}).get("fingerprint")
            admissions[pool.role].fingerprinted(partial(model.fingerprint, pool.role), expected)
            for ep in await admissions[pool.role].verify(pool.endpoints):
                pool.take_out(ep, "its fingerprint could not be taken")
        for pool in pools.values():  # the identity is settled: every connection is checked from now on
            sessions[pool.role].check_connections(pool.check_connection)
        yield Served(model, pools)


def _prm(cfg: RunConfig, pool: EndpointPool, served: dict[str, Any]) -> ModelKind:
    """A process reward model: vLLM's native PRM or a causal LM on vLLM, or a critic on any chat endpoint."""
    backend, method = cfg.roles["prm"].backend, cfg.prm.method
    if method == "critic":
        if backend not in JUDGE_BACKENDS:
            raise ConfigError(
                f"role prm: a critic needs an OpenAI-compatible chat endpoint ({', '.join(JUDGE_BACKENDS)})"
            )
        from .prm_critic import CriticPrm  # openai: seconds of imports that other runs never need

        return CriticPrm(pool, cfg.prm, served)
    if backend != "vllm":
        raise ConfigError(f"role prm: prm.method {method} reads vLLM's answers (backend vllm, not {backend})")
    from .prm import LogprobPrm, PoolingPrm

    return PoolingPrm(pool, cfg.prm, served) if method == "pooling" else LogprobPrm(pool, cfg.prm, served)
