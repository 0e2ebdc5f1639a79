"""A benchmark defined in a YAML file: its name, a kind (`family`) and which field of the data is which; the kind
gives the rest (kinds/). `--benchmark FILE.yaml` works wherever a benchmark's name does (registry.get).

    name: my-bon                  # lowercase letters, digits and '-' (it names folders)
    title: My best-of-N set       # optional (default: the name)
    family: best-of-n             # pairs | best-of-n | ranking
    fields: {prompt: question, rejected: others}   # ours -> the data's; unnamed ones keep our names
    data: my-bon.jsonl            # optional: its data (relative to this file) when --data names none
    groups: [easy, hard]          # optional: the groups a complete run scores (another group is an error)
    headline: prompts             # optional: prompts (every prompt weighs the same) | groups (their mean; default)

A family's fields: pairs `prompt`, `chosen`, `rejected` (one text each); best-of-n `prompt`, `chosen` (one text),
`rejected` (a list of texts); ranking `prompt`, `responses` (a list) and `ratings` (a number each, higher is
better); every family `id` (default: the record's index) and `group` (default: "default"). A field named in
`fields` must be in every record; one left to its own name may be absent where it has a default. A mistake in the
file is one ConfigError naming the file and the key.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from ..errors import ConfigError, DataError, located
from ..examples import Example
from .kinds import KINDS, best_of_n, pairs, ranking
from .kinds.grouped import Lead
from .shared import fields as check
from .shared.lines import floats
from .shared.records import data_files
from .spec import Benchmark

SUFFIXES = (".yaml", ".yml")  # a benchmark named by a path with one of these is read from that file
FAMILIES = ("pairs", "best-of-n", "ranking")
DEFAULT_GROUP = "default"
# each family's fields: required, then those with a default
REQUIRED = {"pairs": ("prompt", "chosen", "rejected"), "best-of-n": ("prompt", "chosen", "rejected"),
            "ranking": ("prompt", "responses", "ratings")}  # fmt: skip
OPTIONAL = ("id", "group")
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


class Definition(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A benchmark file's keys, as written."""

    name: str
    family: str
    title: str | None = None
    fields: dict[str, str] = msgspec.field(default_factory=dict)
    data: str | None = None
    groups: list[str] | None = None
    headline: Literal["prompts", "groups"] = "groups"


def is_definition(name: str) -> bool:
    """Whether a benchmark's name is a definition file's path."""
    return name.lower().endswith(SUFFIXES)


def _read(path: Path) -> tuple[dict[str, Any], bytes]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: benchmark file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: benchmark file cannot be read ({exc.strerror or exc})") from None
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}:{where} not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a benchmark file is a mapping of keys (name, family, fields, ...)")
    return data, raw


def definition(path: Path, data: Mapping[str, Any]) -> Definition:
    """The file's keys checked; a ConfigError naming the file and the key."""
    try:
        found = msgspec.convert(data, Definition, strict=False)
    except msgspec.ValidationError as err:
        where, what = located(str(err))
        raise ConfigError(f"{path}: {where or '(top level)'}: {what}") from None
    if not _NAME.fullmatch(found.name):
        raise ConfigError(f"{path}: name: {found.name!r} is not lowercase letters, digits and '-' (it names folders)")
    if found.family not in FAMILIES:
        raise ConfigError(f"{path}: family: unknown kind {found.family!r} (known: {', '.join(FAMILIES)})")
    known = (*REQUIRED[found.family], *OPTIONAL)
    for ours, theirs in found.fields.items():
        if ours not in known:
            raise ConfigError(f"{path}: fields.{ours}: no field of the {found.family} family ({', '.join(known)})")
        if not theirs:
            raise ConfigError(f"{path}: fields.{ours}: names no field of the data")
    if found.groups is not None and (not found.groups or len(set(found.groups)) != len(found.groups)):
        raise ConfigError(f"{path}: groups: name each group once (or leave the key out)")
    return found


@functools.cache
def _cached(path: Path, shown: Path, digest: str) -> Benchmark[Any]:
    data, _ = _read(shown)
    return build(path, definition(shown, data))


def load(path: str | Path) -> Benchmark[Any]:
    """The benchmark a file defines (read again when the file changed); errors name the file as given."""
    shown = Path(path).expanduser()
    _, raw = _read(shown)
    return _cached(shown.resolve(), shown, hashlib.sha256(raw).hexdigest())


def _mapped(found: Definition) -> dict[str, str]:
    """Every field of the family: ours -> the data's key."""
    return {f: found.fields.get(f, f) for f in (*REQUIRED[found.family], *OPTIONAL)}


def _responses(record: Mapping[str, Any], keys: Mapping[str, str], family: str, where: str) -> dict[str, Any]:
    """The family's responses of a record as an Example's chosen, rejected and pairs."""
    key = keys.__getitem__
    if family == "pairs":
        return {"chosen": (check.text(record[key("chosen")], where, key("chosen")),),
                "rejected": (check.text(record[key("rejected")], where, key("rejected")),)}  # fmt: skip
    if family == "best-of-n":
        return {"chosen": (check.text(record[key("chosen")], where, key("chosen")),),
                "rejected": check.texts(record[key("rejected")], where, key("rejected"))}  # fmt: skip
    responses = check.texts(record[key("responses")], where, key("responses"))
    if not isinstance(record[key("ratings")], list):
        raise DataError(f"{where}: '{key('ratings')}' must be a list of numbers, one per response")
    ratings = floats(record[key("ratings")], where, key("ratings"))
    if len(ratings) != len(responses):
        raise DataError(f"{where}: {len(ratings)} ratings for {len(responses)} responses")
    return {"chosen": responses, "rejected": (), "pairs": ranking.rated_pairs(ratings),
            "extra": {"ratings": list(ratings)}}  # fmt: skip


def parser(found: Definition, source: Path) -> Callable[[Any, Path, int], Example]:
    """The definition's `parse_record`: one record to an Example of its family, errors naming file and record."""
    keys = _mapped(found)
    required = [keys[f] for f in REQUIRED[found.family]] + [keys[f] for f in OPTIONAL if f in found.fields]
    hint = f" (map the data's names with 'fields:' in {source.name})"

    def parse_record(value: Any, path: Path, index: int) -> Example:
        record, where = check.record(value, path, index, required, hint)
        rid = check.ident(record[keys["id"]], where, keys["id"]) if record.get(keys["id"]) is not None else str(index)
        group = record.get(keys["group"])
        if group is None:
            group = DEFAULT_GROUP
        if found.groups is not None:
            group = check.choice(group, where, keys["group"], found.groups)
        group = check.text(group, where, keys["group"])
        return Example(id=rid, benchmark=found.name, group=group,
                       prompt=check.prompt(record[keys["prompt"]], where, keys["prompt"]),
                       **_responses(record, keys, found.family, where))  # fmt: skip

    return parse_record


def _pairs_headline(lead: Lead) -> Callable[[pairs.PairSummary], list[tuple[str, float | None]]]:
    """The pairs kind's columns with the prompt-weighted accuracy leading ("prompts") or its macro average."""
    if lead == "groups":
        return pairs.headline
    return lambda summary: sorted(pairs.headline(summary), key=lambda column: column[0] == "accuracy")


HEADLINES: dict[str, Callable[[Lead], Callable[[Any], list[tuple[str, float | None]]]]] = {
    "pairs": _pairs_headline,
    "best-of-n": best_of_n.NUMBERS.headline_of,
    "ranking": ranking.NUMBERS.headline_of,
}


def build(path: Path, found: Definition) -> Benchmark[Any]:
    """The Benchmark of a checked definition."""
    keys = _mapped(found)
    listed = ", ".join(f"{keys[f]}" for f in REQUIRED[found.family])
    data = str((path.parent / found.data).resolve()) if found.data else ""
    return Benchmark(
        name=found.name,
        title=found.title or found.name,
        kind=KINDS[found.family],
        layout=f"a JSON, JSONL or parquet file of records with {listed} (defined in {path})",
        group_field="group",
        files_in=data_files,
        parse_record=parser(found, path),
        expected_groups=tuple(found.groups or ()),
        headline=HEADLINES[found.family](found.headline),
        default_data=data,
        definition=str(path),
    )
