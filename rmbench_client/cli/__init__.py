"""`rmbench-client`: run, suite, status, score, compare, report, data, serve, stop, watch, reproduce, leaderboard.
One module per subcommand here (compare's and report's are in report/); user mistakes end in one line on stderr and
exit code 2."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..benchmarks.shared.step_aggregates import NAMES as STEP_AGGREGATES
from ..errors import RmbError, UserError
from ..redaction import hidden
from ..results.stamp import Origin, made_by
from . import leaderboard, reproduce, run, status, suite, watch
from .compare import add_compare_parser, cmd_compare
from .data import add_data_parser, cmd_data
from .report import add_report_parser, cmd_report
from .values import seconds, seed, unit_interval

if TYPE_CHECKING:
    from rich.console import Console

EXIT_USER_ERROR = 2
DESCRIPTION = (
    f"How good is your reward model really? Runs {benchmarks.titles()} against reward models, DPO policies and LLM "
    "judges served by vLLM (or TGI, TEI, SGLang, any OpenAI-compatible API), exactly as the benchmarks score them."
)


VERBOSE_HELP = "-v info, -vv debug (every retry)"


def _common() -> argparse.ArgumentParser:
    """Flags every subcommand takes too (`rmbench-client run -v ...` as well as `rmbench-client -v run ...`)."""
    common = argparse.ArgumentParser(add_help=False)
    # a dest of its own: the subcommand's parser fills a namespace of its own, copied over the top-level one, so a
    # shared dest (or a shared action's default) would replace the count given before the subcommand
    common.add_argument("-v", "--verbose", dest="verbose_after", action="count", default=argparse.SUPPRESS,
                        help=VERBOSE_HELP)  # fmt: skip
    return common


class _Parser(argparse.ArgumentParser):
    """The top-level parser: `verbose` counts -v before the subcommand and after it (`-v run -v` is -vv)."""

    def parse_known_args(self, *args: Any, **kwargs: Any) -> tuple[argparse.Namespace, list[str]]:  # type: ignore[override]
        found, extras = super().parse_known_args(*args, **kwargs)
        found.verbose += found.__dict__.pop("verbose_after", 0)
        return found, extras


class _Version(argparse.Action):
    """--version: the client's version, read only when asked (in a checkout it may ask git: version.py)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from ..version import client_version

        sys.stdout.write(f"rmbench-client {client_version()}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = _Parser(prog="rmbench-client", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="count", default=0, help=VERBOSE_HELP)
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=argparse.ArgumentParser)
    run.add_parser(sub, common)
    suite.add_parser(sub, common)
    status.add_parser(sub, common)

    p_score = sub.add_parser("score", parents=[common], help="re-score saved per-sample score files")
    p_score.add_argument("paths", nargs="+", metavar="FILE", help="samples.jsonl or a benchmark's own score file")
    p_score.add_argument("--domain", metavar="NAME", help="RM-Bench domain of records that carry none")
    p_score.add_argument("--benchmark", metavar="NAME|FILE.yaml", help="the records are this benchmark's, also those "
                         "that name none (a run's own benchmark file is found beside its samples.jsonl)")  # fmt: skip
    p_score.add_argument("--json", action="store_true", help="print one JSON object (fractions in [0, 1])")
    p_score.add_argument("--seed", type=seed, default=0, metavar="N", help="bootstrap seed (default 0)")
    p_score.add_argument("--threshold", type=unit_interval, metavar="T",
                         help=f"process benchmarks: each step's score against T (default {C.PRM_THRESHOLD}), by the "
                         f"benchmark's own rule. {benchmarks.step_rules()}")  # fmt: skip
    p_score.add_argument("--prm-function", choices=STEP_AGGREGATES, metavar="NAME", help="step scores of whole "
                         "responses (RewardMATH's PRMs): how a response's step scores become one, as RewardMATH's "
                         f"--prm_function: {', '.join(STEP_AGGREGATES)}")  # fmt: skip

    add_compare_parser(sub, common)
    add_report_parser(sub, common)
    add_data_parser(sub, common)
    p_serve = sub.add_parser("serve", parents=[common], help="start the servers a config describes, wait until healthy")
    p_serve.add_argument("--config", required=True, metavar="FILE", help="the evaluation YAML naming the servers")
    p_serve.add_argument("--role", action="append", metavar="ROLE", help="only this role (repeatable)")
    p_serve.add_argument(
        "--timeout",
        type=seconds,
        default=C.SERVER_READY_TIMEOUT_S,
        metavar="S",
        help=f"wait up to S seconds for every server to answer /health (default {C.SERVER_READY_TIMEOUT_S:.0f})",
    )
    p_serve.add_argument("--capacity-timeout", type=seconds, default=0.0, metavar="S", help="Ray: when the cluster "
                         "cannot hold the replicas now, wait up to S seconds for nodes (an autoscaler adds them) "
                         "instead of refusing")  # fmt: skip
    p_serve.add_argument("--idle-timeout", type=seconds, metavar="S", help="Ray: each replica removes itself (server, "
                         "actor, placement group) after S seconds without a request")  # fmt: skip
    p_stop = sub.add_parser("stop", parents=[common], help="stop the servers `serve` started from this directory")
    p_stop.add_argument("--config", metavar="FILE", help="only this config's servers (others recorded here keep "
                        "running), and its replicas on its Ray cluster")  # fmt: skip
    watch.add_parser(sub, common)
    reproduce.add_parser(sub, common)
    leaderboard.add_parser(sub, common)
    return parser


def cmd_score(args: argparse.Namespace, console: Console) -> int:
    from ..blas_threads import few_blas_threads
    from ..report.printing import print_summary
    from ..results.score_files import summarize

    with few_blas_threads():  # read_scores, or a results file's subsets
        summary = summarize(
            args.paths,
            args.domain,
            seed=args.seed,
            threshold=args.threshold,
            benchmark=args.benchmark,
            prm_function=args.prm_function,
        )
    if args.json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        print_summary(summary, title=", ".join(args.paths), console=console)
    return 0


def cmd_serve(args: argparse.Namespace, console: Console) -> int:
    from ..launcher import start_servers
    from .cluster import serve_replicas, stop_replicas

    cfg = _serve_config(args.config)
    # the roles placed on a Ray cluster (serve.cluster: ray)
    on_ray = serve_replicas(cfg, args.role, args.capacity_timeout, args.idle_timeout, args.timeout)
    wanted = args.role or [r for r, rc in cfg.roles.items() if rc.serve is not None]
    local = [r for r in wanted if r not in on_ray]
    if not local and on_ray:
        return 0
    sys.stderr.write(f"starting the servers of {args.config} and waiting until each answers /health ...\n")
    try:
        for info in start_servers(cfg, roles=local, timeout=args.timeout):
            sys.stdout.write(f"{info.role:<10} {info.url}  ({info.model}, pid {info.pid}, log {info.log})\n")
    except BaseException:
        if on_ray:  # a failed serve leaves nothing running
            stop_replicas(cfg, on_ray)
        raise
    return 0


def _serve_config(path: str) -> Any:
    from ..config.loading import load_config, read_yaml

    data = read_yaml(path)
    return load_config(path, {} if "model" in data else {"model": "serve"})


def cmd_stop(args: argparse.Namespace, console: Console) -> int:
    """Every server `serve` started from this directory; with --config only that config's (and its Ray replicas)."""
    from ..launcher import local_servers, recorded_servers, stop_servers

    if not args.config:
        stopped = stop_servers()
        console.print(f"stopped {len(stopped)} server(s)" if stopped else "no servers recorded as running")
        return 0
    from .cluster import stop_replicas

    cfg = _serve_config(args.config)
    stopped = stop_servers(only=local_servers(cfg))
    others = len(recorded_servers())
    kept = f"; {others} other server(s) recorded here keep running" if others else ""
    done = f"stopped {len(stopped)} server(s) of {args.config}" if stopped else f"no server of {args.config} recorded"
    console.print(done + kept, markup=False, highlight=False)
    removed = stop_replicas(cfg)
    console.print(f"removed {len(removed)} replica(s) from the Ray cluster" if removed else "no replica on Ray")
    return 0


class _LazyConsole:
    """rich's Console, made on first use: a run that prints no table (`--json`) never imports rich."""

    _console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console()
        return getattr(self._console, name)


class Redacting(logging.Formatter):
    """The program's log lines with every secret the process read and every URL's credentials masked
    (redaction.hidden): an HTTP library's own line may print a URL whole."""

    def format(self, record: logging.LogRecord) -> str:
        return hidden(super().format(record))


def main(argv: Sequence[str] | None = None) -> int:
    # httpx imports its own command line (click, pygments, rich) whenever click is installed, which
    # huggingface_hub always brings: about 0.14 s of CPU per run on 2 busy cores, for a command line this program
    # never runs. A None entry makes that one import fail at once, and httpx then stubs its `main`. The program
    # decides this for its own process, as it sets up logging; `import rmbench_client` changes nothing.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    given = list(argv if argv is not None else sys.argv[1:])
    args = build_parser().parse_args(given)
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Redacting("%(levelname)s %(name)s: %(message)s"))  # every library's lines, tracebacks too
    logging.basicConfig(level=level, handlers=[handler])
    for name in ("httpx", "httpx2"):  # no per-request lines (openai 3.x runs on httpx2)
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    console = cast("Console", _LazyConsole())
    commands = {
        "run": run.cmd_run,
        "suite": suite.cmd_suite,
        "status": status.cmd_status,
        "score": cmd_score,
        "compare": cmd_compare,
        "report": cmd_report,
        "data": cmd_data,
        "serve": cmd_serve,
        "stop": cmd_stop,
        "watch": watch.cmd_watch,
        "reproduce": reproduce.cmd_reproduce,
        "leaderboard": leaderboard.cmd_leaderboard,
    }
    try:
        with made_by(Origin(command=tuple(given))):  # the stamp of every result the command writes
            return commands[args.command](args, console)
    except UserError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_USER_ERROR
    except RmbError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; every score already returned is kept, rerun to resume\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
