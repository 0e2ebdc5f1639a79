"""`rmbench-client suite`: every benchmark of the registry whose data is present (or those named) against the same
servers, one run directory per benchmark under the model's directory, and the model-card table of their headline
numbers (`suite.md`, `suite.json` in the model's directory).

A benchmark's headline number is its `Benchmark.leading` number, the last of its `headline` columns (compare's:
RM-Bench's overall avg, RewardBench's and RewardBench 2's score, the pairwise macro accuracy) with its 95% interval from
`headline_intervals`; a benchmark added to the registry joins the suite with no change here. Each run is resumable
as every run is (its score store), so a suite run again sends only what is missing. A suite stopped by a signal
marks the benchmarks it never ran "not run" (a benchmark without data is "missing"); an earlier run's result in
the directory stays in the table for either.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..config.schema import RunConfig
from ..datasets import data_folder
from ..errors import ConfigError, DataError
from .run_directory import make_directory, reporting, write_atomic
from .stamp import stamp
from .summary import RunSummary, load_summary

SUITE_JSON = "suite.json"
SUITE_MD = "suite.md"
SCORED = ("complete", "partial")  # the statuses of a benchmark that has a run to compare or report
NOT_RUN = "not run"  # a benchmark with data the suite never ran (stopped before it); "missing": no data
UNSCORED = ("missing", NOT_RUN, "error")  # the statuses of a cell without a number


@dataclass(frozen=True)
class Planned:
    """One benchmark of a suite: its run's config, or why it has none (no data, a model that cannot score it)."""

    name: str
    cfg: RunConfig | None
    missing: str | None = None


def model_dir(cfg: RunConfig) -> Path:
    """The suite's directory: `--out`, else runs/<model>, the parent of each benchmark's default run directory."""
    return Path(cfg.out) if cfg.out else cfg.replace(out=None).out_dir().parent


def data_root_dir(data_root: str | Path | None, names: Sequence[str] | None = None) -> Path:
    """The folder of the benchmarks' data folders (default data/); DataError when it is not there: a mistyped root
    (or data/ looked for from another directory) is one error, not a suite whose every benchmark is missing. Not
    needed when each benchmark of `names` (None: every one) is defined in a file that names its own `data:`."""
    root = Path(data_root) if data_root is not None else Path(C.DATA_FOLDER)
    own_data = names is not None and all(benchmarks.get(n).default_data for n in names)
    if not root.is_dir() and not own_data:
        raise DataError(f"data root {root}: no such directory (one folder per benchmark, as `rmbench-client data "
                        "fetch` puts them)")  # fmt: skip
    return root


def plan_suite(base: RunConfig, names: Sequence[str] | None, data_root: str | Path | None) -> list[Planned]:
    """Per benchmark (the registry's order, or `names`): the run's config when its data is present under
    `data_root`/<benchmark> (default data/<benchmark>, where `data fetch` puts it), else why it is missing.
    DataError when `data_root` is no directory."""
    chosen = names or base.benchmarks or benchmarks.names()  # the config's `benchmarks:` when none is named
    root = data_root_dir(data_root, chosen)
    out = model_dir(base)
    planned = []
    for name in chosen:
        bench = benchmarks.get(name)
        name = bench.name  # a benchmark file's path names its benchmark
        folder = data_folder(name, root)
        if not (folder.is_dir() and bench.files_in(folder)):
            if not bench.default_data:
                fetch = f"; `rmbench-client data fetch {name}` puts it there" if bench.hub else ""
                planned.append(Planned(name, None, f"no data in {folder}{fetch}"))
                continue
            folder = Path(bench.default_data)  # a benchmark file's own `data:`
        refused = base.fits(bench.process, bool(bench.prm_functions))
        if refused:  # process benchmarks for process models, the others for the rest
            planned.append(Planned(name, None, refused))
            continue
        # a benchmark defined in a file is run by its file (a worker process reads it again)
        cfg = base.replace(benchmark=bench.definition or name, data=str(folder), out=str(out / name))
        planned.append(Planned(name, cfg))
    return planned


def run_suite(
    base: RunConfig,
    names: Sequence[str] | None,
    data_root: str | Path | None,
    run_one: Callable[[RunConfig], str | None],
    stopped: Callable[[], str | None],
) -> tuple[dict[str, Any], dict[str, str]]:
    """Run every planned benchmark with `run_one` (None once it ran, else why it did not: a signal before it began;
    a benchmark whose data is malformed is marked and the others still run) until `stopped` says why the suite
    stopped, then write the suite's table from the run directories. The table written, and the benchmarks with
    data never run, with why (the table shows an earlier run's result for one where there is one)."""
    errors: dict[str, str] = {}
    not_run: dict[str, str] = {}
    planned = plan_suite(base, names, data_root)
    make_directory(model_dir(base), "suite directory")  # an --out that cannot be made: before any benchmark runs
    for p in planned:
        if p.cfg is None:
            continue
        if why := stopped():  # the others are left for the next suite run
            not_run[p.name] = f"the suite was {why} before it"
            continue
        try:
            if why := run_one(p.cfg):
                not_run[p.name] = why
        except DataError as exc:  # this benchmark's data; the servers and the other benchmarks are fine
            errors[p.name] = str(exc)
    missing = {p.name: p.missing for p in planned if p.missing}
    table = write_suite(model_dir(base), base.model, [p.name for p in planned], missing, errors, not_run,
                        msgspec.to_builtins(stamp(base)))  # fmt: skip
    return table, not_run


def _summary(run_dir: Path) -> RunSummary | None:
    """The run directory's summary; None where there is none this version can read."""
    with contextlib.suppress(OSError, DataError):
        return load_summary(run_dir / C.SUMMARY_FILE)
    return None


def cell(run_dir: Path) -> dict[str, Any]:
    """A benchmark's entry in the table, from its run directory's summary: status complete | partial | missing (no
    scored run there; `write_suite` gives one without data its why, and one the suite never ran "not run")."""
    summary = _summary(run_dir)
    if summary is None or not summary.info.scored:
        return {"status": "missing", "why": f"no scored run in {run_dir}"}
    headline, value = summary.leading()
    info = summary.info
    out = {
        "status": "complete" if info.complete else "partial",
        "headline": headline,
        "value": value,
        "ci": summary.intervals().get(headline),
        "run_dir": str(run_dir),
    }
    if info.stamp is not msgspec.UNSET:  # the client that made this number (an earlier suite's run may be older)
        out["version"] = info.stamp.version
    if not info.complete:
        out["why"] = "; ".join(info.partial) or "incomplete"
    return out


def model_row(directory: Path, names: Sequence[str]) -> dict[str, Any]:
    """One model's row: each named benchmark's cell from directory/<benchmark>."""
    return {name: cell(directory / name) for name in names}


def write_suite(
    directory: Path, model: str, names: Sequence[str], missing: dict[str, str], errors: dict[str, str],
    not_run: dict[str, str], made: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """suite.json and suite.md in the model's directory; what was written (suite.json's object). `missing`: the
    benchmarks without data; `not_run`: those with data the suite never ran (stopped before them); `made`: the
    suite's stamp (each cell's run has its own, named by its version)."""
    for run_dir in directory.glob(f"*/{C.DEFINITION_FILE}"):  # earlier runs of benchmarks defined in files
        with contextlib.suppress(ConfigError):
            benchmarks.define_beside(run_dir.parent)
    ran = [n for n in benchmarks.names() if n not in names and (directory / n / C.SUMMARY_FILE).is_file()]
    names = [n for n in benchmarks.names() if n in names or n in ran]  # earlier runs in the directory stay in it
    row = model_row(directory, names)
    for status, whys in (("missing", missing), (NOT_RUN, not_run)):
        for name, why in whys.items():
            if row[name]["status"] == "missing":  # an earlier run's result stays, marked by its own status
                row[name] = {"status": status, "why": why}
    for name, why in errors.items():
        row[name] = {"status": "error", "why": why}
    suite = {"model": model, "benchmarks": list(names), "results": row, "stamp": made}
    make_directory(directory, "suite directory")
    with reporting(directory, "writing the suite's table", "suite directory"):
        write_atomic(directory / SUITE_JSON, json.dumps(suite, indent=2) + "\n")
        write_atomic(directory / SUITE_MD, markdown([suite]))
    return suite


def read_suite(directory: Path) -> dict[str, Any]:
    """A suite directory's table: from suite.json, its cells read again from the run directories."""
    path = directory / SUITE_JSON
    try:
        suite = json.loads(path.read_text(encoding="utf-8"))
        names = list(suite["benchmarks"])
        model = str(suite["model"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a suite table ({exc})") from None
    row = model_row(directory, names)
    for name, old in suite.get("results", {}).items():
        if name in row and row[name]["status"] == "missing" and old.get("status") in UNSCORED:
            row[name] = old
    return {"model": model, "benchmarks": names, "results": row, "dir": str(directory)}


def is_suite(path: Path) -> bool:
    return (path / SUITE_JSON).is_file()


def suite_dirs(paths: Sequence[str]) -> list[Path] | None:
    """The paths as suite directories when they are (None when none is); DataError when some are and some not."""
    found = [is_suite(Path(p)) for p in paths]
    if not any(found):
        return None
    if not all(found):
        others = ", ".join(p for p, f in zip(paths, found, strict=True) if not f)
        raise DataError(f"{others}: not a suite directory (no {SUITE_JSON}); give only suites, or only runs")
    return [Path(p) for p in paths]


def per_benchmark(suites: Sequence[Path]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The suites' tables, and per benchmark the run directories of the suites that scored it (of two or more
    suites, those two or more scored)."""
    tables = [read_suite(d) for d in suites]
    names = list(dict.fromkeys(n for t in tables for n in t["benchmarks"]))
    runs = {}
    for name in names:
        found = [str(Path(t["dir"]) / name) for t in tables if t["results"].get(name, {}).get("status") in SCORED]
        if found and len(found) >= min(2, len(tables)):
            runs[name] = found
    return tables, runs


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def format_cell(c: dict[str, Any]) -> str:
    if c["status"] in UNSCORED:
        return str(c["status"])
    text = _percent(c["value"])
    if c.get("ci"):
        lo, hi = c["ci"]
        text += f" [{_percent(lo)}, {_percent(hi)}]"
    return text + (" (partial)" if c["status"] == "partial" else "")


def _short(c: dict[str, Any]) -> str:
    """Why a cell is not complete, cut where a run lists many missing groups (its summary has them all)."""
    why = str(c["why"])
    if len(why) <= C.SUITE_NOTE_CHARS:
        return why
    where = f" (all in {c['run_dir']}/{C.SUMMARY_FILE})" if "run_dir" in c else ""
    return why[: C.SUITE_NOTE_CHARS].rsplit(" ", 1)[0] + " …" + where


def markdown(suites: Sequence[dict[str, Any]]) -> str:
    """One row per model, one column per benchmark (headline, in %, with its 95% interval); notes say why a
    benchmark is partial, missing (no data), not run or failed."""
    names = list(dict.fromkeys(n for s in suites for n in s["benchmarks"]))
    heads: dict[str, str | None] = {}
    for s in suites:
        for n in names:
            heads.setdefault(n, s["results"].get(n, {}).get("headline"))
    header = [f"{n} ({heads[n]})" if heads.get(n) else n for n in names]
    lines = ["| model | " + " | ".join(header) + " |", "|---|" + "---|" * len(names)]
    notes = []
    for s in suites:
        cells = [s["results"].get(n, {"status": "missing"}) for n in names]
        lines.append(f"| {s['model']} | " + " | ".join(format_cell(c) for c in cells) + " |")
        notes += [f"- {s['model']}, {n}: {c['status']}: {_short(c)}" for n, c in zip(names, cells, strict=True)
                  if "why" in c]  # fmt: skip
    text = "\n".join(lines) + "\n"
    legend = "Headline numbers in %, with their 95% bootstrap intervals in brackets."
    return text + "\n" + legend + "\n" + ("\n" + "\n".join(notes) + "\n" if notes else "")
