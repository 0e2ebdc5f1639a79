"""`rmbench-client reproduce RUN_DIR`: a finished run run again as it recorded itself (its benchmark, data checked
by checksum, model and settings), its servers asked afresh, and whether the two agree (analysis/reproduction.py). Exit 0
when every prompt agrees within the tolerance it prints, 1 when not, 2 for a mistake (changed data among them)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..config.schema import MAIN_ROLE
from .run import add_client_options, add_server_arguments, add_template_options, interrupted_line, overrides
from .values import non_negative

if TYPE_CHECKING:
    from rich.console import Console

    from ..analysis.reproduction import Reproduction
    from ..results.typed import Estimate

EXIT_DISAGREE = 1


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("reproduce", parents=[common], help="run a finished run again and say whether the two agree")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory to reproduce (its summary.json's stamp "
                   "says how it was run)")  # fmt: skip
    p.add_argument("--out", metavar="DIR", help="where the reproduction runs (default: RUN_DIR-reproduction; "
                   "what is there is replaced)")  # fmt: skip
    p.add_argument("--data", metavar="PATH", help="where the run's data lies now (default: where the run read it); "
                   "its content must be what the run scored")  # fmt: skip
    p.add_argument("--tolerance", type=non_negative, default=C.REPRODUCE_TOLERANCE, metavar="T",
                   help="two numbers agree when |a - b| <= T * max(1, |a|), a the recorded one "
                   f"(default {C.REPRODUCE_TOLERANCE:g})")  # fmt: skip
    add_server_arguments(p)
    o = p.add_argument_group("templates and pacing (the run's own settings stay)")
    add_template_options(o)
    add_client_options(o)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def changes(args: argparse.Namespace, kind: str, roles: list[str]) -> dict[str, Any]:
    """The config keys the flags set, over the run's config of model type `kind` (whose main role --endpoint
    names) and `roles` (--api-key-env and --concurrency apply to each)."""
    found = overrides(argparse.Namespace(**(vars(args) | {"type": kind, "data": None, "out": None})))
    keep = {k: v for k, v in found.items() if v is not None and k.startswith(("roles.", "client.", "reward.", "dpo."))}
    for role in roles:
        for key in ("api_key_env", "concurrency"):
            if getattr(args, key) is not None:
                keep[f"roles.{role}.{key}"] = getattr(args, key)
    return keep


def _estimate(e: Estimate) -> str:
    if e.value is None:
        return "–"
    interval = f" [{100 * e.low:.1f}, {100 * e.high:.1f}]" if e.low is not None and e.high is not None else ""
    return f"{100 * e.value:.1f}{interval}"


def as_json(done: Reproduction) -> dict[str, Any]:
    def estimate(e: Estimate) -> dict[str, Any]:
        return {"value": e.value, "low": e.low, "high": e.high}

    found = done.agreement
    return {
        "agree": done.agree,
        "run_dir": str(done.run_dir),
        "out": str(done.result.run_dir),
        "headline": done.headline_name,
        "recorded": estimate(done.recorded),
        "reproduced": estimate(done.reproduced),
        "tolerance": found.tolerance,
        "compared": found.compared,
        "differing": list(found.differ),
        "unscored": list(found.unscored),
        "largest": found.largest,
        "largest_at": found.largest_at,
        "models": [{"role": m.role, "same": m.same, "said": m.said} for m in done.models],
        "notes": list(done.notes),
    }


def lines(done: Reproduction) -> list[str]:
    """What the command prints: the two headlines, the prompts compared, the models, and the verdict."""
    made = [done.run.stamp, done.result.stamp]
    versions = ", ".join(
        f"{how} by rmbench-client {s.version}"
        for how, s in zip(("recorded", "reproduced"), made, strict=True)
        if s is not None
    )
    found = done.agreement
    first = found.differ[:3]
    differ = f"{len(found.differ)} differ beyond it" + (f" (first {', '.join(first)})" if first else "")
    unscored = f"; {len(found.unscored)} the run scored were not scored again" if found.unscored else ""
    largest = "" if found.largest is None else f"; largest difference {found.largest:.3g}"
    if found.largest:
        largest += f" ({found.largest_at})"
    out = [
        f"reproduced {done.run_dir} in {done.result.run_dir}" + (f" ({versions})" if versions else ""),
        f"{done.headline_name}: recorded {_estimate(done.recorded)}, reproduced {_estimate(done.reproduced)}",
        f"prompts: {found.compared} compared at tolerance {found.tolerance:g} (|a - b| <= {found.tolerance:g} * "
        f"max(1, |a|)); {differ}{unscored}{largest}",
        *(m.said for m in done.models),
        *(f"note: {n}" for n in done.notes),
        "agree: every prompt within the tolerance" if done.agree else "disagree",
    ]
    return out


def cmd_reproduce(args: argparse.Namespace, console: Console) -> int:
    from ..analysis.reproduction import compared, plan, recorded_config
    from ..api import run_config  # the Python API's run, as `run`'s: the CLI acts on the signal that ended it
    from ..results.stamp import Origin, made_by
    from ..run.interrupts import EXIT_INTERRUPTED, Interrupted

    run_dir = Path(args.run_dir)
    recorded, _, _ = recorded_config(run_dir)  # the run's model type and roles: what the flags apply to
    kind = str(recorded.get("type") or "reward")
    roles = list(recorded.get("roles") or {}) or [MAIN_ROLE.get(kind, "reward")]
    planned = plan(run_dir, args.out, args.data, changes(args, kind, roles))
    progress = not args.no_progress and not args.json
    try:
        with made_by(Origin(reproduces=str(run_dir))):  # the reproduction's stamp names the run
            result, ended_by = run_config(planned.cfg, fresh=True, progress=progress)
    except Interrupted as exc:
        sys.stderr.write(interrupted_line(exc, str(planned.cfg.out_dir())))
        return EXIT_INTERRUPTED[exc.signal]
    done = compared(planned, result, args.tolerance)
    if args.json:
        sys.stdout.write(json.dumps(as_json(done)) + "\n")
    else:
        sys.stdout.write("\n".join(lines(done)) + "\n")
    if ended_by is not None:
        return EXIT_INTERRUPTED[ended_by]
    return 0 if done.agree else EXIT_DISAGREE
