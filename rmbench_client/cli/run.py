"""`rmbench-client run`: a benchmark through servers (or a baseline), from a config file, from flags alone, or both.

Flags override the config (only flags actually given): `--endpoint URL --served-model NAME` describe the run's main
role (the reward model, the judge, or the DPO policy); `--policy-endpoint` / `--reference-endpoint` and
`--judge-endpoint` name the other roles and imply the model type. `--dry-run` says what is stored and what would be
sent, and changes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..config.loading import load_config, validated
from ..config.schema import MAIN_ROLE, RunConfig
from ..errors import ConfigError
from .values import seed
from .watch import add_benchmarks_arguments, add_tracker_arguments, log_runs

if TYPE_CHECKING:
    from rich.console import Console

    from ..run.interrupts import Interrupted

EXIT_INCOMPLETE = 1


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("run", parents=[common], help="score a benchmark through servers (or a baseline)")
    add_run_arguments(p, suite=False)


def add_run_arguments(p: argparse.ArgumentParser, suite: bool) -> None:
    """The flags of `run`; `suite` takes them all but --benchmark, with --data and --out for every benchmark."""
    p.add_argument("--config", metavar="FILE", help="evaluation YAML (see configs/); flags override it")
    p.add_argument("--model", metavar="NAME", help="the run's name in reports (default: the served model); "
                   "baseline:random|longer|markdown needs no server")  # fmt: skip
    p.add_argument("--type", choices=["reward", "dpo", "judge", "baseline", "prm"],
                   help="model type (default: reward)")  # fmt: skip
    if suite:
        add_benchmarks_arguments(
            p,
            data="a directory with one folder per benchmark, as `data fetch` lays it out (default: data/)",
            out="the model's directory, one run directory per benchmark in it (default: runs/<model>)",
        )
    else:
        # not argparse's choices: the config names a plug-in that failed to load, and why
        p.add_argument("--benchmark", metavar="NAME", help=f"default: rm-bench; known: {', '.join(benchmarks.names())}")
        p.add_argument("--data", metavar="PATH", help="dataset file or directory "
                       "(default: $RMBENCH_DATA_DIR, else data/<benchmark>, else the hub)")  # fmt: skip
        p.add_argument("--out", metavar="DIR", help="run directory (default: runs/<model>/<benchmark>)")
    p.add_argument("--limit", type=int, metavar="N", help="score only the first N prompts (the result is partial)")
    p.add_argument("--seed", type=seed, metavar="N", help="seed of the bootstrap intervals and of baseline:random")
    add_server_arguments(p)
    o = p.add_argument_group("scoring options")
    add_template_options(o)
    o.add_argument("--dpo-reward", dest="dpo.reward", choices=["ratio", "sum", "avg", "norm"], help="DPO reward")
    o.add_argument("--judge-order", dest="judge.order", choices=["random", "both"],
                   help="a judge sees each pair once in a seeded random order, or in both orders")  # fmt: skip
    o.add_argument("--judge-prompt", dest="judge.prompt",
                   choices=["project", "reward-bench", "judgebench", "judgebench-vanilla"],
                   help="the project's judge prompts, reward-bench's (from its installed package) or JudgeBench's "
                   "(its arena-hard judge, or its vanilla one)")  # fmt: skip
    o.add_argument("--judge-seed", dest="judge.seed", type=int, metavar="N", help="seed of the judge's answer order")
    o.add_argument("--judge-max-tokens", dest="judge.max_tokens", type=int, metavar="N", help="judge answer length")
    o.add_argument("--prm-method", dest="prm.method", choices=["pooling", "logprobs", "critic"],
                   help="how a PRM's step scores are read (default: pooling, vLLM's native PRM)")  # fmt: skip
    o.add_argument("--threshold", dest="prm.threshold", type=float, metavar="T",
                   help=f"process benchmarks: each step's score against T (default {C.PRM_THRESHOLD}), by the "
                   f"benchmark's own rule. {benchmarks.step_rules()}")  # fmt: skip
    o.add_argument("--judge-reasoning-budget", dest="judge.reasoning_budget", type=int, metavar="N",
                   help="thinking tokens a judge may spend (vLLM's thinking_token_budget)")  # fmt: skip
    o.add_argument("--judge-samples", dest="judge.samples", type=int, metavar="N",
                   help="answers per question, read as a majority verdict (needs a --judge-temperature)")  # fmt: skip
    o.add_argument("--judge-temperature", dest="judge.temperature", type=float, metavar="T", help="judge temperature")
    add_client_options(o)
    b = p.add_argument_group("behaviour")
    b.add_argument("--fresh", action="store_true", help="forget the scores stored by earlier runs in the run directory")
    b.add_argument("--dry-run", action="store_true", help="say what is stored and what would be sent; change nothing")
    b.add_argument("--heatmaps", action=argparse.BooleanOptionalAction, default=True,
                   help="write RM-Bench heatmap PNGs (default: on)")  # fmt: skip
    b.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_tracker_arguments(p)


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """Where the servers are and how they are reached: `run`'s, `suite`'s and `reproduce`'s."""
    g = p.add_argument_group("servers (instead of, or over, the config's roles)")
    g.add_argument("--endpoint", action="append", metavar="URL", help="the main role's endpoint (repeat for several)")
    g.add_argument("--served-model", metavar="NAME", help="the model name the main role's server serves")
    g.add_argument("--backend", choices=["vllm", "tgi", "tei", "sglang", "openai"], help="the main role's server kind")
    g.add_argument("--policy-endpoint", action="append", metavar="URL", help="DPO policy endpoint (implies dpo)")
    g.add_argument("--policy-model", metavar="NAME", help="the policy's served model name")
    g.add_argument("--reference-endpoint", action="append", metavar="URL", help="DPO reference endpoint")
    g.add_argument("--reference-model", metavar="NAME", help="the reference's served model name")
    g.add_argument("--judge-endpoint", action="append", metavar="URL", help="judge endpoint (implies judge)")
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the servers' API key")
    g.add_argument("--concurrency", type=int, metavar="N", help="requests in flight per endpoint")


def add_template_options(o: argparse._ArgumentGroup) -> None:
    """The chat templates' flags (the client renders a file's): `run`'s, `suite`'s and `reproduce`'s."""
    o.add_argument("--template", dest="reward.template", metavar="T", help="reward template: server, auto, ids, "
                   "or a Jinja file / tokenizer_config.json")  # fmt: skip
    o.add_argument("--dpo-template", dest="dpo.template", metavar="T", help="DPO template: server, auto, or a file")


def add_client_options(o: argparse._ArgumentGroup) -> None:
    """How the client paces itself: `run`'s, `suite`'s and `reproduce`'s."""
    o.add_argument("--rate-limit", dest="client.rate_limit", type=float, metavar="R", help="requests per second")
    o.add_argument("--all-down-patience", dest="client.all_down_patience", type=float, metavar="S",
                   help="seconds a role may have no endpoint up before the run stops (default 300)")  # fmt: skip
    o.add_argument("--workers", dest="client.workers", type=int, metavar="N",
                   help="scoring processes sharing the run, each a shard of the prompts (default 1)")  # fmt: skip


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The config keys the flags set (dotted), None for flags not given."""
    keys = ("model", "type", "benchmark", "data", "out", "limit", "seed")
    out: dict[str, Any] = {k: getattr(args, k, None) for k in keys}
    out.update({k: v for k, v in vars(args).items() if "." in k})
    if out["type"] is None:  # the role flags imply the type
        out["type"] = "dpo" if args.policy_endpoint else "judge" if args.judge_endpoint else None
    roles = {
        "reward": (None, None, None),
        "policy": (args.policy_endpoint, args.policy_model, None),
        "reference": (args.reference_endpoint, args.reference_model, None),
        "judge": (args.judge_endpoint, None, None),
        "prm": (None, None, None),
    }
    main = MAIN_ROLE.get(out["type"] or "reward", "reward")  # --endpoint / --served-model / --backend name it
    endpoints, served, backend = roles[main]
    roles[main] = (endpoints or args.endpoint, served or args.served_model, backend or args.backend)
    for role, (endpoints, served, backend) in roles.items():
        if endpoints is None and served is None and backend is None:
            continue
        out |= {f"roles.{role}.endpoints": endpoints, f"roles.{role}.served_model": served}
        out[f"roles.{role}.backend"] = backend
    return out


# the flags that give a role its endpoint and its model's name on the server
ROLE_FLAGS = {
    "reward": ("--endpoint URL", "--served-model NAME"),
    "policy": ("--policy-endpoint URL", "--policy-model NAME"),
    "reference": ("--reference-endpoint URL", "--reference-model NAME"),
    "judge": ("--judge-endpoint URL", "--served-model NAME"),
    "prm": ("--endpoint URL", "--served-model NAME"),
}


def check_role_flags(found: dict[str, Any]) -> None:
    """Without a config file, the roles a run needs come from flags alone: one line naming the flags still to add
    (rather than the config keys they would fill)."""
    model, kind = str(found.get("model") or ""), found.get("type") or "reward"
    if model.startswith("baseline:") or kind == "baseline":
        return
    needed = ["policy", "reference"] if kind == "dpo" else [MAIN_ROLE.get(kind, "reward")]
    if kind == "dpo" and found.get("dpo.reward") not in (None, "ratio"):
        needed = ["policy"]  # sum, avg and norm read the policy alone
    for role in needed:
        given = (found.get(f"roles.{role}.endpoints"), found.get(f"roles.{role}.served_model"))
        missing = [flag for flag, value in zip(ROLE_FLAGS[role], given, strict=True) if not value]
        if missing:
            alone = " (or --dpo-reward sum, avg or norm, which need no reference)" if role == "reference" else ""
            raise ConfigError(f"command line: no {role} model to ask: add {' '.join(missing)}{alone}")


def config(args: argparse.Namespace) -> RunConfig:
    """The run's config: the file (if any), the flags over it; --api-key-env and --concurrency apply to every role."""
    found = overrides(args)
    if args.config is None:
        check_role_flags(found)
    cfg = load_config(args.config, found)
    every = {"api_key_env": args.api_key_env, "concurrency": args.concurrency}
    every = {k: v for k, v in every.items() if v is not None}
    if not every:
        return cfg
    roles = {name: role.replace(**every) for name, role in cfg.roles.items()}
    data = cfg.to_data() | {"roles": {n: r.to_data() for n, r in roles.items()}}
    return validated(data, "--api-key-env / --concurrency")


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    from ..api import run_config  # the Python API's run: the CLI prints what it returns
    from ..report.printing import print_summary
    from ..run.interrupts import EXIT_INTERRUPTED, Interrupted

    cfg = config(args)
    if args.dry_run:
        return dry_run(cfg, args.json, args.fresh)
    progress = not args.no_progress and not args.json
    try:
        result, ended_by = run_config(cfg, fresh=args.fresh, progress=progress, heatmaps=args.heatmaps)
    except Interrupted as exc:
        sys.stderr.write(interrupted_line(exc, str(cfg.out_dir())))
        return EXIT_INTERRUPTED[exc.signal]
    if args.json:
        sys.stdout.write(json.dumps(result.summary) + "\n")
    elif result.summary.get("scored"):
        print_summary(result.summary, title=f"{cfg.model} on {benchmarks.name_of(cfg.benchmark)}", console=console)
    for rid, reason in list(result.failures.items())[:20]:
        sys.stderr.write(f"failed: {rid}: {' '.join(reason.split())}\n")
    if result.failures:
        sys.stderr.write(f"{len(result.failures)} prompt(s) not scored (see failures.jsonl); rerun to retry them\n")
    changed = result.summary.get("changed") or []
    for change in changed:  # nothing a changed server said is in the result, but the run is not complete
        sys.stderr.write(f"changed: {change}\n")
    sys.stderr.write(f"run directory: {result.run_dir}\n")
    log_runs(args, [result.run_dir])
    if result.aborted:
        sys.stderr.write(
            f"error: {result.aborted}; the {result.summary.get('scored', 0)} prompt(s) scored are kept, "
            "rerun the same command to resume\n"
        )
    if ended_by is not None:
        return EXIT_INTERRUPTED[ended_by]
    return 0 if result.all_scored and not changed else EXIT_INCOMPLETE


def interrupted_line(exc: Interrupted, out_dir: str) -> str:
    """What a run ended by a signal before it began says (its one line)."""
    return f"{exc} before the run began: nothing in {out_dir} was changed\n"


def dry_run(cfg: RunConfig, as_json: bool, fresh: bool = False) -> int:
    from ..run.planning import plan

    found = plan(cfg, fresh)
    if as_json:
        sys.stdout.write(json.dumps(found) + "\n")
        return 0
    what = "comparisons" if found["pairwise"] else "sequences"
    stored = f"{found['stored_prompts']} prompts complete, {found['stored_units']} {what}"
    sys.stdout.write(
        f"{cfg.model} on {benchmarks.name_of(cfg.benchmark)}: {found['prompts']} prompts, {found['units']} {what}\n"
        f"  stored in {found['out_dir']}: {'not used: --fresh forgets what is stored' if fresh else stored}\n"
        f"  would send: {found['to_send']} {what} for {found['pending_prompts']} prompts\n"
    )
    return 0
