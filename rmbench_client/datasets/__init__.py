"""Benchmark datasets: load from a file, a directory, the `data/` folder or the hub, and validate into Examples.

One module per benchmark format (`rmbench`, `rewardbench`, ...) with `files_in(directory)` and
`parse_record(record, path, index)`; the benchmark registry (`rmbench_client.benchmarks.registry`) says which module
serves which benchmark.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..benchmarks.shared.fields import rename
from ..benchmarks.shared.records import iter_records, record_name
from ..errors import ConfigError, DataError
from ..examples import Example

if TYPE_CHECKING:
    from ..benchmarks.spec import Benchmark

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Dataset:
    benchmark: str
    examples: list[Example]
    sources: list[Path]
    missing: list[str]  # groups (RM-Bench domains, RewardBench subsets) a complete run has and this data lacks
    unscored: int = 0  # records the benchmark leaves out (Benchmark.unscored says which)
    duplicates: tuple[str, ...] = ()  # ids of later records left out (Benchmark.duplicates says why)


def missing_words(missing: list[str], group_field: str = "", shown: int = C.MISSING_GROUPS_SHOWN) -> str:
    """'no data for <field>(s) a, b' for the groups a run lacks; the first few and their number where very many are."""
    field = f"{group_field}(s) " if group_field else ""
    if len(missing) <= C.MISSING_GROUPS_LISTED:
        return f"no data for {field}{', '.join(missing)}"
    return f"no data for {len(missing)} {group_field or 'group'}(s): {', '.join(missing[:shown])}, ..."


def data_folder(benchmark: str, root: str | Path = C.DATA_FOLDER) -> Path:
    """Where `data fetch` puts a benchmark's files and a run without --data looks first: data/<benchmark>."""
    return Path(root) / benchmark


def _files(bench: Benchmark[Any], path: str | Path | None) -> list[Path]:
    """The data files: of `path` (a file or a directory), else of the benchmark's variable's (`data_env`), else of
    its own default (a benchmark file's `data:`), else of data/<benchmark>, else downloaded."""
    from . import hub

    benchmark = bench.name
    from_env = os.environ.get(bench.data_env) or None if bench.data_env else None
    if path is None and from_env is not None:
        path = from_env
    if path is None and bench.default_data:
        path = bench.default_data
    if path is None:
        local = data_folder(benchmark)
        if local.is_dir() and bench.files_in(local):
            log.info("%s: reading %s", benchmark, local)
            return bench.files_in(local)
        roots = hub.download(bench)  # files
    else:
        roots = [Path(path)]
    files: list[Path] = []
    for root in roots:
        # a path from the environment says so: an exported variable is easily forgotten
        named = f" (named by ${bench.data_env})" if from_env is not None and str(path) == from_env else ""
        if root.is_dir():
            found = bench.files_in(root)
            if not found:
                raise DataError(f"{root}{named}: no {benchmark} data files in this directory ({bench.layout})")
            files += found
        elif root.exists():
            files.append(root)
        else:
            raise DataError(f"{root}{named}: no such file or directory")
    return files


def load_dataset(
    benchmark: str | Benchmark[Any], path: str | Path | None, fields: Mapping[str, str] | None = None
) -> Dataset:
    """Load and validate a benchmark (its name, or the registry's entry a run resolved once); `path` None reads
    data/<benchmark>, else downloads it from the hub. `fields` maps our field names to the file's (e.g.
    {"prompt": "question"})."""
    from ..benchmarks import registry as benchmarks  # the registry imports this package's modules

    bench = benchmarks.get(benchmark) if isinstance(benchmark, str) else benchmark
    benchmark = bench.name
    unknown = [k for k in fields or {} if k not in bench.fields]
    if unknown:
        known = f"its fields are {', '.join(bench.fields)}" if bench.fields else "it reads its own layout only"
        raise ConfigError(f"data_fields: {', '.join(map(repr, unknown))} is no field of {benchmark} ({known})")
    files = _files(bench, path)
    examples: list[Example] = []
    seen: dict[str, Path] = {}
    unscored = 0
    duplicates: list[str] = []
    for f in files:
        records = iter_records(f) if bench.gather is None else bench.gather(iter_records(f), f)
        for i, record in enumerate(records):
            ex = bench.parse_record(rename(record, fields or {}), f, i)
            if ex is None:
                unscored += 1
                continue
            if ex.id in seen and bench.duplicates:  # the benchmark's own loader keeps the first (PRMBench)
                duplicates.append(ex.id)
                continue
            if ex.id in seen:
                where = record_name(f, i, record)
                raise DataError(f"{where}: duplicate id {ex.id!r} (first seen in {seen[ex.id]})")
            seen[ex.id] = f
            examples.append(ex)
    if not examples:
        left_out = f" to score ({unscored} left out: {bench.unscored})" if unscored else ""
        raise DataError(f"{', '.join(map(str, files))}: no records{left_out}")
    present = {ex.group for ex in examples}
    missing = [g for g in bench.expected_groups if g not in present]
    if missing:
        log.info("%s: %s; the run will be partial", benchmark, missing_words(missing))
    if unscored:
        log.info("%s: %d record(s) not scored: %s", benchmark, unscored, bench.unscored)
    if duplicates:
        log.info("%s: %d later record(s) with a repeated id left out: %s", benchmark, len(duplicates), bench.duplicates)
    return Dataset(benchmark, examples, files, missing, unscored, tuple(duplicates))
