"""RM-Bench's score files: this project's per-sample line, and RM-Bench's own output file, read and written.

- samples.jsonl line: `{"id", "domain", "subdomain", "score_chosen": [3], "score_rejected": [3]}` (a pairwise
  judge: `"results"`, its 3x3 credits, instead of the scores).
- RM-Bench's output (`scripts/run_rm.py`): its data records (id, prompt, chosen, rejected, domain, ...) plus
  `score_chosen` and `score_rejected` (3 floats each), one JSON list written with indent=4. Written here as
  `rmbench-results.json`, which RM-Bench's `compute_accuracy` reads; a plain list of
  `{"score_chosen", "score_rejected"}` (domain from `--domain`) is read too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ... import json_text
from ...errors import DataError
from ...examples import Example, PromptScores
from ..shared.lines import credit_value, floats, write_text
from .constants import RESULTS_FILE, STYLES
from .data import DOMAIN_NAMES

_KEYS = (("score_chosen", "score_rejected"), ("scores_chosen", "scores_rejected"))


def line(example: Example, scores: PromptScores) -> dict[str, Any]:
    """An RM-Bench prompt's line: three scores a side, or the judge's 3x3 credits."""
    rec: dict[str, Any] = {"id": example.id, "domain": example.group, "subdomain": example.subgroup}
    if scores.results is not None:
        n = len(example.chosen)
        rec["results"] = [list(scores.results[i * n : (i + 1) * n]) for i in range(n)]
    else:
        rec |= {"score_chosen": list(scores.chosen), "score_rejected": list(scores.rejected)}
    return rec


def _domain(rec: dict[str, Any], domain: str | None, where: str) -> str:
    name = rec.get("domain")
    rid = rec.get("id")
    if name is None and isinstance(rid, str) and "/" in rid:
        name = rid.split("/", 1)[0]
    name = name or domain
    if name is None:
        raise DataError(f"{where}: no domain (no 'domain' field or 'domain/N' id); pass --domain NAME")
    if name not in DOMAIN_NAMES:
        raise DataError(f"{where}: unknown domain {name!r} (known: {', '.join(sorted(DOMAIN_NAMES))})")
    return DOMAIN_NAMES[name][0]


def _is_mine(rec: dict[str, Any]) -> bool:
    for keys in _KEYS:
        for k in keys:
            if k in rec:
                return isinstance(rec[k], list) and len(rec[k]) != 1
    results = rec.get("results")
    return isinstance(results, list) and (len(results) != 1 or isinstance(results[0], list))


def read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    """An RM-Bench record (3 scores a side, or 3x3 credits), or None when the record is not one."""
    if "scores" in rec or "num_correct" in rec or not _is_mine(rec):
        return None
    rid = rec.get("id", index)
    group = _domain(rec, domain, where)
    ident = str(rid if isinstance(rid, str) and "/" in rid else f"{rec.get('subdomain') or group}/{rid}")
    if not any(k in rec for keys in _KEYS for k in keys):
        results = credit_value(rec["results"], where)
        if len(results) != 9:
            raise DataError(f"{where}: 'results' must be a 3x3 matrix")
        return PromptScores(ident, group, (), (), results)
    keys = next(keys for keys in _KEYS if keys[0] in rec or keys[1] in rec)
    for key in keys:
        if key not in rec:
            raise DataError(f"{where}: missing key '{key}'")
    chosen, rejected = (floats(rec[k], where, k) for k in keys)
    if len(chosen) != 3 or len(rejected) != 3:
        raise DataError(f"{where}: expected 3 chosen and 3 rejected scores (RM-Bench)")
    return PromptScores(ident, group, chosen, rejected)


def write_results(out_dir: Path, examples_by_id: Mapping[str, Example], scores: Sequence[PromptScores]) -> Path:
    """rmbench-results.json: RM-Bench's output records (the data record, domains named as RM-Bench names them,
    plus the scores), a JSON list with indent=4 as RM-Bench writes it."""
    records = []
    for s in scores:
        ex = examples_by_id.get(s.id)
        if ex is None:
            raise DataError(f"prompt {s.id}: scored but not in the dataset")
        prompt = ex.prompt if isinstance(ex.prompt, str) else [dict(m) for m in ex.prompt]
        record: dict[str, Any] = {"id": ex.id, "prompt": prompt, "chosen": list(ex.chosen)}
        record |= {"rejected": list(ex.rejected), "domain": ex.subgroup or ex.group}
        record |= {k: v for k, v in ex.extra.items() if k not in record}
        if s.results is not None:  # a pairwise judge: the 3x3 credits
            record["results"] = [list(s.results[i * 3 : i * 3 + 3]) for i in range(3)]
        elif len(s.chosen) != len(STYLES) or len(s.rejected) != len(STYLES):
            raise DataError(f"prompt {s.id}: RM-Bench needs three chosen and three rejected scores")
        else:
            record |= {"score_chosen": list(s.chosen), "score_rejected": list(s.rejected)}
        records.append(record)
    return write_text(Path(out_dir) / RESULTS_FILE, json_text.indent4(records))
