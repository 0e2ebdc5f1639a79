"""The benchmark registry: the built-in benchmarks (one folder each beside this module) and those other installed
packages declare in the entry-point group `rmbench_client.benchmarks`, each a `spec.Benchmark`, checked alike.

Everything that differs between benchmarks is reached through `get(name)`; the machinery that runs, compares and
reports never asks which benchmark it is. A benchmark defined in a file (definitions.py) is named by the file's path
wherever a name goes; once read, it is known by its own name in this process too (a run directory keeps a copy of
the file, `constants.DEFINITION_FILE`, by which its outputs are read again: `of_summary`'s `beside`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from ..constants import DEFINITION_FILE
from ..errors import ConfigError, DataError
from . import (
    definitions,
    if_reward_bench,
    judgebench,
    m_reward_bench,
    pairwise,
    ppe_correctness,
    ppe_preference,
    prmbench,
    processbench,
    reward_bench,
    reward_bench_2,
    rewardmath,
    rm_bench,
    rmb,
)
from .spec import Benchmark, Summary

log = logging.getLogger(__name__)

ENTRY_POINTS = "rmbench_client.benchmarks"  # the group a plug-in declares its benchmark in (docs/plugins.md)
BUILT_IN: tuple[Benchmark[Any], ...] = tuple(
    module.BENCHMARK
    for module in (
        rm_bench,
        reward_bench,
        reward_bench_2,
        judgebench,
        pairwise,
        ppe_preference,
        ppe_correctness,
        rmb,
        prmbench,
        processbench,
        rewardmath,
        m_reward_bench,
        if_reward_bench,
    )
)
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")  # it names folders (runs/<model>/<benchmark>, data/<benchmark>)


def _problem(bench: object, where: str, taken: Mapping[str, str]) -> str | None:
    """Why `bench` cannot be registered, or None."""
    if not isinstance(bench, Benchmark):
        return f"{where} is a {type(bench).__name__}, not a rmbench_client.benchmarks.spec.Benchmark"
    if not _NAME.fullmatch(bench.name):
        return f"{where}: benchmark name {bench.name!r} is not lowercase letters, digits and '-'"
    if bench.name in taken:
        return f"{where}: benchmark {bench.name!r} is already registered by {taken[bench.name]}"
    kind = bench.summary_type
    if kind is not dict and not (isinstance(kind, type) and issubclass(kind, Summary)):
        return f"{where}: its summary_type {kind!r} is not a subclass of rmbench_client.benchmarks.spec.Summary"
    return None


def _load(entry: EntryPoint) -> object:
    """What an entry point names: a Benchmark, a function that returns one, or a module holding one as BENCHMARK."""
    loaded = entry.load()
    if isinstance(loaded, ModuleType):
        loaded = getattr(loaded, "BENCHMARK", loaded)
    return loaded() if callable(loaded) and not isinstance(loaded, Benchmark) else loaded


@functools.cache
def _registered() -> tuple[dict[str, Benchmark[Any]], dict[str, str]]:
    """Every benchmark by name (the built-ins first, in their order), and the plug-ins that could not be used: their
    entry point's name -> why. Read once per process."""
    found: dict[str, Benchmark[Any]] = {}
    owner: dict[str, str] = {}
    for bench in BUILT_IN:
        problem = _problem(bench, f"built-in {bench.name}", owner)
        assert problem is None, problem
        found[bench.name], owner[bench.name] = bench, "rmbench-client"
    broken: dict[str, str] = {}
    for entry in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        package = f" in {entry.dist.name} {entry.dist.version}" if entry.dist else ""
        where = f"plug-in {entry.name} ({entry.value}{package})"
        try:
            loaded = _load(entry)
        except Exception as exc:  # a plug-in's bug is its own: the other benchmarks still work
            broken[entry.name] = f"{where} failed to load: {type(exc).__name__}: {exc}"
            continue
        problem = _problem(loaded, where, owner)
        if problem is None and isinstance(loaded, Benchmark) and loaded.name != entry.name:
            # the entry point's name is all a plug-in that fails to import can be asked for by: the two must agree
            problem = f"{where}: its entry point is named {entry.name!r} but its benchmark {loaded.name!r}"
        if problem is not None or not isinstance(loaded, Benchmark):
            broken[entry.name] = problem or where
            if isinstance(loaded, Benchmark):  # asked for by the benchmark's own name, the answer is the same
                broken.setdefault(loaded.name, broken[entry.name])
            continue
        found[loaded.name], owner[loaded.name] = loaded, where
    for why in dict.fromkeys(broken.values()):
        log.warning("%s", why)
    return found, broken


def reload() -> None:
    """Read the plug-ins again on the next question (a package installed or put on sys.path since the last read)."""
    _registered.cache_clear()


_defined: dict[str, Benchmark[Any]] = {}  # benchmarks read from definition files in this process, by name


def names() -> tuple[str, ...]:
    """Every benchmark's name: the built-ins in their order, then the plug-ins by name, then those read from files in
    this process."""
    return tuple(_registered()[0]) + tuple(n for n in _defined if n not in _registered()[0])


def benchmarks() -> tuple[Benchmark[Any], ...]:
    return tuple(_registered()[0].values()) + tuple(b for n, b in _defined.items() if n not in _registered()[0])


def define(path: str | Path) -> Benchmark[Any]:
    """The benchmark a definition file defines, known by its name from now on in this process; ConfigError for a
    name a built-in or a plug-in has, or one another file defined differently."""
    bench = definitions.load(path)
    found, broken = _registered()
    if bench.name in found or bench.name in broken:
        raise ConfigError(f"{path}: name: {bench.name!r} is the name of a benchmark already registered; choose another")
    earlier = _defined.get(bench.name)
    if (
        earlier is not None
        and earlier is not bench
        and Path(earlier.definition).read_bytes() != Path(bench.definition).read_bytes()
    ):
        raise ConfigError(f"{path}: name: {bench.name!r} is already defined differently by {earlier.definition}")
    _defined[bench.name] = bench
    return bench


def get(name: str) -> Benchmark[Any]:
    """The benchmark of this name, or of this definition file; ConfigError naming the known ones (or why a plug-in of
    this name failed)."""
    if definitions.is_definition(name):
        return define(name)
    found, broken = _registered()
    if name in found:
        return found[name]
    if name in _defined:
        return _defined[name]
    if name in broken:
        raise ConfigError(broken[name])
    raise ConfigError(f"unknown benchmark {name!r} (known: {', '.join(names())}; or a benchmark file, NAME.yaml)")


def name_of(benchmark: str) -> str:
    """A benchmark's name, also where it is given by its definition file."""
    return get(benchmark).name if definitions.is_definition(benchmark) else benchmark


def define_beside(directory: Path) -> None:
    """Know the benchmark a run directory's copy of its definition file defines, if it has one."""
    copy = directory / DEFINITION_FILE
    if copy.is_file():
        define(copy)


def titles() -> str:
    """Every benchmark by its name in prose, as a list in a sentence ("A, B and C")."""
    named = [b.title or b.name for b in benchmarks()]
    return ", ".join(named[:-1]) + " and " + named[-1]


def step_rules() -> str:
    """How each process benchmark judges a step's score against the threshold T, in a sentence (its `step_rule`)."""
    from .shared.steps import RULE_WORDS

    return "; ".join(f"{b.title or b.name}: {RULE_WORDS[b.step_rule]}" for b in benchmarks() if b.process)


def of_summary(summary: Any, where: str, beside: Path | None = None) -> Benchmark[Any]:
    """The benchmark a summary object belongs to (a benchmark defined in a file: by the copy of its file in the
    directory `beside`, where the summary lies); a DataError naming `where` otherwise."""
    name = summary.get("benchmark") if isinstance(summary, dict) else None
    if isinstance(name, str) and name not in names() and beside is not None:
        try:
            define_beside(beside)
        except ConfigError as exc:
            raise DataError(f"{where}: {exc}") from None
    found = dict(zip(names(), benchmarks(), strict=True))
    if name not in found:
        raise DataError(f"{where}: not a summary of a known benchmark ({', '.join(found)})")
    return found[name]
