"""`rmbench-client data fetch|list`: the benchmarks' files in data/<benchmark>/, downloaded from the Hugging Face
hub and checked against the known checksums (data/README.md lists them)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..benchmarks.spec import Benchmark
from ..datasets import data_folder, hub, load_dataset, missing_words
from ..errors import DataError

if TYPE_CHECKING:
    from rich.console import Console


def _checksum_state(bench: Benchmark[Any], path: Path) -> str:
    """ "ok", "mismatch" or "unknown" (no known checksum for this file name)."""
    expected = hub.known_checksum(bench, path.name)
    if expected is None:
        return "unknown"
    kind, _, want = expected.partition(":")
    return "ok" if hub.checksum(path, kind) == want else "mismatch"


def inventory(root: str | Path = C.DATA_FOLDER) -> list[dict[str, Any]]:
    """What data/ holds, per registered benchmark: its files with their checksum state, prompts, missing groups."""
    out = []
    for bench in benchmarks.benchmarks():
        folder = data_folder(bench.name, root)
        entry: dict[str, Any] = {"benchmark": bench.name, "dir": str(folder), "present": False}
        files = bench.files_in(folder) if folder.is_dir() else []
        if files:
            entry["present"] = True
            entry["files"] = {str(f.relative_to(folder)): _checksum_state(bench, f) for f in files}
            try:
                data = load_dataset(bench.name, folder)
                entry |= {"prompts": len(data.examples), "missing_groups": data.missing}
            except DataError as exc:
                entry["error"] = str(exc)
        out.append(entry)
    return out


def _describe(entry: dict[str, Any]) -> str:
    if not entry["present"]:
        if entry["benchmark"] not in _hub_names():  # own data, or published elsewhere (RMB: on GitHub)
            layout = benchmarks.get(entry["benchmark"]).layout
            return f"{entry['benchmark']}: not in {entry['dir']} (not on the hub: put {layout} there)"
        return f"{entry['benchmark']}: not in {entry['dir']} (rmbench-client data fetch {entry['benchmark']})"
    if "error" in entry:
        return f"{entry['benchmark']}: {entry['dir']}: unreadable: {entry['error']}"
    states = list(entry["files"].values())
    checks = f"{states.count('ok')} checksum(s) ok"
    if "mismatch" in states:
        checks += f", {states.count('mismatch')} MISMATCH"
    text = f"{entry['benchmark']}: {entry['dir']}: {entry['prompts']} prompts in {len(states)} file(s), {checks}"
    if entry["missing_groups"]:
        text += f"; {missing_words(entry['missing_groups'])}"
    return text


def _hub_names() -> list[str]:
    return [b.name for b in benchmarks.benchmarks() if b.hub]


def cmd_data(args: argparse.Namespace, console: Console) -> int:
    """`data fetch`: download and check; `data list`: what is present."""
    if args.data_command == "list":
        entries = inventory(args.dir)
        if args.json:
            sys.stdout.write(json.dumps(entries) + "\n")
        else:
            sys.stdout.write("".join(_describe(e) + "\n" for e in entries))
        return 0
    names = args.benchmarks or _hub_names()
    for name in names:
        bench = benchmarks.get(name)
        dest = data_folder(name, args.dir)
        repos = (
            ", ".join(dict.fromkeys(s.repo for s in bench.hub)) or "(nothing)"
        )  # a repository once however many parts
        sys.stderr.write(f"{name}: downloading {repos} into {dest}\n")
        for path, verified in hub.fetch(bench, dest):
            sys.stdout.write(f"{path}  {'checksum ok' if verified else 'no known checksum'}\n")
        data = load_dataset(name, dest)
        sys.stdout.write(f"{name}: {len(data.examples)} prompts in {dest}\n")
    return 0


def add_data_parser(subparsers: Any, common: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Register `data` on the CLI's subparsers."""
    parents = [common] if common is not None else []
    p: argparse.ArgumentParser = subparsers.add_parser(
        "data", parents=parents, help="download the benchmarks into data/, list them"
    )
    sub = p.add_subparsers(dest="data_command", required=True)
    fetch = sub.add_parser("fetch", help="download benchmarks from the Hugging Face hub and check their checksums")
    fetch.add_argument("benchmarks", nargs="*", metavar="BENCHMARK", help=f"default: all of {', '.join(_hub_names())}")
    listing = sub.add_parser("list", help="show which benchmarks data/ holds, with prompt counts")
    listing.add_argument("--json", action="store_true", help="print one JSON list")
    for q in (fetch, listing):
        q.add_argument("--dir", default=C.DATA_FOLDER, metavar="DIR", help="the data folder (default: ./data)")
    return p
