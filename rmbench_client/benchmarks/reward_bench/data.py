"""RewardBench: the filtered set and the prior sets, from parquet, JSON or JSONL, validated into Examples.

The filtered set (`allenai/reward-bench`, split `filtered`) names each record's subset. The prior sets
(`allenai/pref-test-sets`, one split per subset: anthropic_helpful, anthropic_hhh, shp, summarize) hold a
conversation as the prompt and name the subset by their split, as reward-bench's loader does: a file whose name
starts with the split (`shp-00000-of-00001.parquet`, `shp.jsonl`) is that subset, and the record's own `subset`
field is kept as `subsubset`. Prior-set ids restart at 0 in every split, so they become `<split>/<id>`. The
pref-test-sets splits outside the four (mtbench_human, ...) load as their own subsets, in no section and not in
the score, as on the leaderboard.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...examples import Example
from ..shared import fields as check
from ..shared.records import data_files
from ..shared.rewardbench_sections import SECTIONS, WEIGHTS
from .constants import PRIOR_OTHER_SPLITS, PRIOR_SECTION, PRIOR_SUBSETS

PRIOR_SPLITS = frozenset(PRIOR_SUBSETS) | frozenset(PRIOR_OTHER_SPLITS)
KNOWN_SUBSETS = frozenset(WEIGHTS) | PRIOR_SPLITS
_SECTION_OF = {s: sec for sec, subsets in SECTIONS.items() for s in subsets} | {
    s: PRIOR_SECTION for s in PRIOR_SUBSETS
}  # the other prior-set splits belong to no section
_SPLIT = re.compile(r"^([A-Za-z_]+)(?:-\d{5}-of-\d{5}.*)?$")  # hub shard names: <split>-00000-of-00001[-hash]


def prior_split(path: Path) -> str | None:
    """The prior-set split a file holds, from its name; None for the filtered set and other files."""
    m = _SPLIT.match(path.name.split(".", 1)[0])
    return m.group(1) if m and m.group(1) in PRIOR_SPLITS else None


def parse_record(record: Any, path: Path, index: int) -> Example:
    """One validated RewardBench example, or a DataError naming file and record."""
    split = prior_split(path)
    required = ("id", "prompt", "chosen", "rejected") + (() if split else ("subset",))
    record, where = check.record(record, path, index, required)
    extra = {k: record[k] for k in ("chosen_model", "rejected_model") if k in record}
    if split:
        subset = split
        if "subset" in record:
            extra["subsubset"] = record["subset"]
        ident = f"{split}/{check.ident(record['id'], where)}"
    else:
        subset = record["subset"]
        if subset not in KNOWN_SUBSETS:
            raise DataError(f"{where}: unknown subset {subset!r}")
        ident = check.ident(record["id"], where)
        if subset in PRIOR_SPLITS and "/" not in ident:
            ident = f"{subset}/{ident}"  # a merged file of prior sets: the same id scheme as per-split files
    return Example(
        id=ident,
        benchmark="reward-bench",
        group=subset,
        subgroup=_SECTION_OF.get(subset, ""),
        prompt=check.prompt(record["prompt"], where),
        chosen=(check.text(record["chosen"], where, "chosen"),),
        rejected=(check.text(record["rejected"], where, "rejected"),),
        extra=extra,
    )


files_in = data_files  # e.g. the filtered split plus the prior-set splits
