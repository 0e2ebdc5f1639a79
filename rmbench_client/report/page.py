"""The report page (`rmbench-client report`): one self-contained HTML file per run or comparison.

The page carries its own CSS and JavaScript (report/assets/) and its data (gzip-compressed JSON, base64) inline,
and its content security policy allows no network access at all: it opens from a file on an offline laptop
(html.py).

What the page needs from a run directory: summary.json (the benchmark's summary with "model", "type", "complete",
"partial", "data": {"sources": [...]}), samples.jsonl (per-prompt scores or a judge's credits, and "details" when
the model kind writes them). The texts come from the dataset files the summary names (or `--data`).

Only prompts that some run did not win outright (a comparison lost or tied) are embedded, each text once; every
list, filter and diff is computed in the browser from this data (report/assets/report.js).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import constants as C
from ..benchmarks.shared.credits import outcomes, pair_credits
from ..benchmarks.spec import Benchmark
from ..datasets import load_dataset
from ..errors import DataError
from ..examples import Example, PromptScores, prompt_text, response_lengths
from ..results import comparison
from ..results.comparison import Run, load_runs, paired_scores, samples_file
from ..results.data_hashes import file_sha256, prompt_hash
from ..results.run_directory import make_directory, reporting, write_atomic
from ..results.score_files import read_scores
from ..results.summary import RunSummary
from ..results.typed import failure_records, failures_by_endpoint
from . import differences, process_page
from .compare import compare_rows
from .html import self_contained


def render_page(data: dict[str, Any]) -> str:
    """The page: template, CSS, JS and the data filled in."""
    return self_contained("report.html", ("common.js", "report.js", "process.js"), data["title"], data)


def default_out(paths: list[str]) -> Path:
    """report.html in the run directory for one run, in the current directory for several."""
    first = Path(paths[0])
    if len(paths) == 1:
        return (first if first.is_dir() else first.parent) / C.REPORT_FILE
    return Path(C.REPORT_FILE)


def write_report(
    paths: list[str],
    out: str | Path | None = None,
    data: str | Sequence[str] | None = None,
    seed: int = 0,
    examples: Mapping[str, Example] | None = None,
) -> tuple[Path, list[str]]:
    """Build the page of these runs and write it; returns its path and the notes on its data files. `examples`:
    one run's prompts as it loaded them (by id), so that nothing is read again."""
    target = Path(out) if out is not None else default_out(paths)
    data_ = build(paths, data=data, seed=seed, examples=examples)
    make_directory(target.parent, "the page's directory")  # an --out of /dev/null/x/page.html: one line
    with reporting(target.parent, f"writing {target.name}", "the page's directory"):
        return write_atomic(target, render_page(data_)), data_["notes"]


def _width(rec: PromptScores) -> int:
    return len(rec.chosen) if rec.results is None else math.isqrt(len(rec.results))


def lost_any(rec: PromptScores) -> bool:
    """Whether a prompt lost (or tied) at least one chosen-vs-rejected comparison: the page lists it."""
    if rec.pairs is not None:  # only these comparisons are scored (PPE Correctness)
        return bool((pair_credits(rec) < 1).any())
    if rec.results is None and len(rec.chosen) != len(rec.rejected):  # RMB's best-of-N: one best, several losers
        return not all(c > r for c in rec.chosen for r in rec.rejected)
    if rec.results is not None and _width(rec) ** 2 != len(rec.results):  # a judge on a best-of-N list
        return any(v < 1 for v in rec.results)
    return bool((outcomes([rec], _width(rec)) < 1).any())


def _sources(runs: list[Run], data: str | Sequence[str] | None) -> list[list[str]]:
    """Per run, the data it is shown with: one --data per run (runs on versions of one file), one for all, or the
    files its own summary names (each run its own: runs on two versions of one file each find theirs); a run whose
    summary names none (an older run) is shown with the files the others name."""
    given = [data] if isinstance(data, str) else list(data or [])
    if len(given) > 1:
        if len(given) != len(runs):
            raise DataError(f"--data: one path for all runs, or one per run in their order ({len(runs)} runs, "
                            f"{len(given)} paths)")  # fmt: skip
        return [[d] for d in given]
    if given:
        return [given] * len(runs)
    own = [list(r.summary.info.data.sources) for r in runs]
    named = list(dict.fromkeys(src for sources in own for src in sources))
    if not named:
        names = ", ".join(r.name for r in runs)
        raise DataError(f"{names}: the summary names no data files (an older run); pass --data PATH")
    return [sources or named for sources in own]


def load_examples(
    benchmark: str, sources: Sequence[str], fields: Mapping[str, str] | None = None
) -> dict[str, Example]:
    """The examples of every source file or directory, by id (`fields`: the run's field names, for own data)."""
    out: dict[str, Example] = {}
    for src in sources:
        if not Path(src).exists():
            raise DataError(f"{src}: a data file of the run is not there any more; pass --data PATH")
        out |= {ex.id: ex for ex in load_dataset(benchmark, src, fields).examples}
    return out


def _run_scores(raw: str) -> list[PromptScores]:
    file = samples_file(raw)
    if not file.is_file():
        raise DataError(f"{raw}: no {file.name} (the report needs the per-prompt scores)")
    return read_scores([file])[1]


def _style_bias(summary: RunSummary, scores: list[PromptScores], examples: dict[str, Example]) -> Any:
    """The summary's style-bias diagnostics (a block several benchmarks share: read from the JSON object);
    computed here for a run written before they existed."""
    bench = summary.bench
    if "style_bias" in summary.raw or bench.process:  # a process benchmark has none
        return summary.raw.get("style_bias")
    lengths = response_lengths(examples[s.id] for s in scores)
    rescored = bench.summary_json(bench.score(scores, seed=summary.info.seed, lengths=lengths))
    return rescored.get("style_bias")


@dataclass(frozen=True)
class Shown:
    """What of a prompt with scored `pairs` the page embeds: the pairs some run lost or tied (indices into
    them) and the answers they compare (indices into chosen and rejected); a best-of-K row's other answers stay
    out of the page."""

    pairs: list[int]
    chosen: list[int]
    rejected: list[int]

    def example(self, ex: Example) -> dict[str, Any]:
        assert ex.pairs is not None
        pairs = [ex.pairs[k] for k in self.pairs]
        mapped = [[self.chosen.index(c), self.rejected.index(r)] for c, r in pairs]
        return {"c": [ex.chosen[i] for i in self.chosen], "r": [ex.rejected[j] for j in self.rejected], "x": mapped}

    def scores(self, rec: PromptScores) -> PromptScores:
        details = self.details(rec.details) if rec.details else rec.details
        if rec.results is not None:
            return dataclasses.replace(rec, results=tuple(rec.results[k] for k in self.pairs), details=details)
        chosen, rejected = (tuple(side[i] for i in keep) for side, keep in ((rec.chosen, self.chosen),
                                                                           (rec.rejected, self.rejected)))  # fmt: skip
        return dataclasses.replace(rec, chosen=chosen, rejected=rejected, details=details)

    def details(self, details: dict[str, Any]) -> dict[str, Any]:
        """The details of the embedded answers (DPO's per-answer numbers) and pairs (a judge's answers)."""
        out = dict(details)
        for key, value in details.items():
            if isinstance(value, dict) and set(value) == {"chosen", "rejected"}:
                out[key] = {"chosen": [value["chosen"][i] for i in self.chosen],
                            "rejected": [value["rejected"][j] for j in self.rejected]}  # fmt: skip
            elif key in ("answers", "judgements") and isinstance(value, list):
                out[key] = [value[k] for k in self.pairs]
        return out


def shown_pairs(ex: Example, runs: list[PromptScores]) -> Shown:
    """The pairs of a prompt that some run lost or tied, and the answers they compare."""
    assert ex.pairs is not None
    lost = sorted({int(k) for rec in runs for k in np.flatnonzero(pair_credits(rec) < 1)})
    return Shown(lost, sorted({ex.pairs[k][0] for k in lost}), sorted({ex.pairs[k][1] for k in lost}))


def _run_data(
    run: Run, scores: list[PromptScores], shown: dict[str, Shown | None], examples: dict[str, Example]
) -> dict[str, Any]:
    summary, info, bench = run.summary, run.summary.info, run.summary.bench
    columns, rows = bench.summary_rows(summary.numbers)
    embedded = [(view.scores(s) if (view := shown[s.id]) else s) for s in scores if s.id in shown]
    steps = process_page.run_steps(scores, set(shown)) if bench.process else {}
    return {
        "name": run.name,
        "type": info.type,
        "complete": info.complete,
        "partial": info.partial,
        "warnings": info.warnings or [],
        "undefined": [f"{name}: {why}" for name, why in summary.undefined().items()],
        "counts": {"prompts": info.prompts, "scored": info.scored, "failed": info.failed},
        "failed_by_endpoint": failures_by_endpoint(failure_records(samples_file(run.path).parent)),
        "columns": columns,
        "rows": rows,
        "matrices": bench.matrices(summary.numbers),
        "style_bias": _style_bias(summary, scores, examples),
        "scores": {s.id: [*s.chosen, *s.rejected] for s in embedded if s.results is None},
        "results": {s.id: list(s.results) for s in embedded if s.results is not None},
        "details": {s.id: s.details for s in embedded if s.details},
        "steps": steps,
        "threshold": summary.raw.get("threshold"),
        "facts": process_page.facts(summary) if bench.process else [],
        "stamp": summary.raw.get("stamp"),  # what made the run (results/stamp.py)
    }


def _comparison(runs: list[Run], scores: list[list[PromptScores]], seed: int) -> dict[str, Any]:
    header, rows = compare_rows(runs)
    paired, why_not = paired_scores(runs, scores)  # the prompts the same in every run
    intervals = [r.summary.intervals() for r in runs]
    if paired is None:
        return {"header": header, "rows": rows, "intervals": intervals, "differences": None, "why_not": why_not}
    return {
        "header": header,
        "rows": rows,
        "intervals": intervals,
        "differences": differences.page_json(tested := comparison.differences(runs, paired, seed=seed)),
        "why_not": comparison.untested(runs, tested),
    }


def check_texts(
    runs: list[Run], scores: list[list[PromptScores]], examples: list[dict[str, Example]], sources: list[list[str]]
) -> list[str]:
    """DataError naming the run (its directory) whose scored prompt is not the text it scored (the file changed,
    or the runs scored different data); notes for data files changed since a run whose scored prompts are
    unchanged. `examples` and `sources`: each run's."""
    notes = []
    for r, run, found, src in zip(runs, scores, examples, sources, strict=True):
        name, raw, data = r.name, r.path, r.summary.info.data
        hashes = data.prompt_sha256
        if hashes is None:
            notes.append(f"{name}: no data hashes in the summary (an older run); texts are shown unchecked")
            continue
        differ = [s.id for s in run if s.id in hashes and prompt_hash(found[s.id]) != hashes[s.id]]
        if differ:
            several = " (one --data per run, in their order, for runs on versions of one file)" if len(runs) > 1 else ""
            raise DataError(
                f"{raw} ({name}): {len(differ)} scored prompt(s) (first {differ[0]}) differ from {', '.join(src)}: "
                f"the data changed since this run; pass --data with the version it scored{several}"
            )
        if set(src) != set(data.sources):
            continue  # shown with other files than it names: what they hold was checked above
        for path, digest in data.sha256.items():
            if Path(path).is_file() and file_sha256(Path(path)) != digest:
                notes.append(f"{path} changed since {name} scored it; the prompts it scored are unchanged")
    return list(dict.fromkeys(notes))


def _merged(each: list[dict[str, Example]]) -> tuple[dict[str, Example], set[str]]:
    """The runs' examples as one (the first run's order), and the ids whose content differs between runs."""
    merged: dict[str, Example] = {}
    differ = set()
    for found in each:
        for ex_id, ex in found.items():
            if ex_id not in merged:
                merged[ex_id] = ex
            elif merged[ex_id] is not ex and prompt_hash(merged[ex_id]) != prompt_hash(ex):
                differ.add(ex_id)
    return merged, differ


def _prompt(ex: Example, view: Shown | None) -> dict[str, Any]:
    text = prompt_text(ex.prompt)
    answers = view.example(ex) if view else {"c": list(ex.chosen), "r": list(ex.rejected)}
    return {"id": ex.id, "g": ex.group, "s": ex.subgroup, "p": text, **answers}


def _shown(
    bench: Benchmark[Any],
    runs: list[Run],
    scores: list[list[PromptScores]],
    examples: dict[str, Example],
    differ: set[str],
) -> tuple[dict[str, Shown | None], list[dict[str, Any]]]:
    """The prompts the page embeds (those some run lost, or a process benchmark's misjudged solutions; never one
    whose text differs between the runs' data), and their texts in dataset order."""
    if bench.process:
        thresholds = [float(r.summary.raw.get("threshold", C.PRM_THRESHOLD)) for r in runs]
        ids = process_page.shown_ids(bench.step_rule, list(zip(thresholds, scores, strict=True))) - differ
        return dict.fromkeys(ids), process_page.prompts(examples, ids)
    lost = {s.id for run in scores for s in run if lost_any(s)} - differ
    by_id = [{s.id: s for s in run} for run in scores]
    shown = {i: shown_pairs(examples[i], [r[i] for r in by_id if i in r]) if examples[i].pairs is not None else None
             for i in lost}  # fmt: skip
    return shown, [_prompt(examples[ex_id], shown[ex_id]) for ex_id in examples if ex_id in shown]


def build(
    paths: list[str],
    data: str | Sequence[str] | None = None,
    seed: int = 0,
    examples: Mapping[str, Example] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, JSON-ready: one run, or several compared with the first (`examples`: one run's
    prompts as it loaded them, instead of its data files read again)."""
    runs = load_runs(paths)
    bench = runs[0].summary.bench
    if not (bench.chosen_vs_rejected or bench.best_of_n or bench.ranking or bench.process):
        raise DataError(f"{bench.name}: the report page lists chosen-vs-rejected comparisons, which it has not")
    scores = [_run_scores(r.path) for r in runs]
    sources = _sources(runs, data)
    loaded: dict[tuple[str, ...], dict[str, Example]] = {}
    fields = runs[0].summary.info.data.fields
    if examples is not None and len(runs) == 1:
        each = [dict(examples)]
    else:
        each = [loaded.get(tuple(src)) or loaded.setdefault(tuple(src), load_examples(bench.name, src, fields))
                for src in sources]  # fmt: skip
    for r, run, found, src in zip(runs, scores, each, sources, strict=True):
        absent = [s.id for s in run if s.id not in found]
        if absent:
            raise DataError(f"{r.name}: prompt {absent[0]} (and {len(absent) - 1} more) not in {', '.join(src)}")
    notes = check_texts(runs, scores, each, sources)
    examples, differ = _merged(each)
    if bench.ranking:  # a ranking's rated pairs are listed as comparisons of the better response with the worse
        examples = {i: dataclasses.replace(ex, rejected=ex.chosen) for i, ex in examples.items()}
        scores = [[dataclasses.replace(s, rejected=s.chosen) for s in run] for run in scores]
    if differ:
        notes.append(f"{len(differ)} prompt(s) differ between the runs' data: not listed, nor compared")
    shown, prompts = _shown(bench, runs, scores, examples, differ)
    title = runs[0].name if len(runs) == 1 else " vs ".join(r.name for r in runs)
    return {
        "title": f"{title} on {bench.name}",
        "benchmark": bench.name,
        "group_field": bench.group_field,
        "subgroup_field": bench.subgroup_field,
        "labels": list(bench.response_labels),
        "sources": list(dict.fromkeys(src for run_sources in sources for src in run_sources)),
        "runs": [_run_data(r, sc, shown, found) for r, sc, found in zip(runs, scores, each, strict=True)],
        "prompts": prompts,
        "process": bench.step_rule if bench.process else None,
        "comparison": _comparison(runs, scores, seed) if len(runs) > 1 else None,
        "notes": notes,
    }
