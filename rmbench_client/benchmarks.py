"""The benchmark registry: one entry per benchmark, naming its loader (datasets/), its scoring (scoring/), its
per-sample line and its own file formats (score_files/), its terminal table and its headline numbers.

Everything that differs between benchmarks is reached through `get(name)`; nothing outside this module asks
which benchmark it is. To add a benchmark: a dataset module, a scoring module, and one `Benchmark(...)` below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import constants as C
from .datasets import judgebench as judgebench_data
from .datasets import pairwise as pairwise_data
from .datasets import ppe_correctness as ppe_correctness_data
from .datasets import ppe_preference as ppe_preference_data
from .datasets import prmbench as prmbench_data
from .datasets import processbench as processbench_data
from .datasets import rewardbench as rewardbench_data
from .datasets import rewardbench2 as rewardbench2_data
from .datasets import rmb as rmb_data
from .datasets import rmbench as rmbench_data
from .errors import ConfigError
from .examples import Example, PromptScores
from .model_kinds.base import JudgeMode
from .report import ppe_table, process_table, table
from .score_files import pairwise as pairwise_files
from .score_files import ppe_correctness as ppe_correctness_files
from .score_files import ppe_preference as ppe_preference_files
from .score_files import process as process_files
from .score_files import rewardbench as rewardbench_files
from .score_files import rewardbench2 as rewardbench2_files
from .score_files import rmb as rmb_files
from .score_files import rmbench as rmbench_files
from .scoring import judgebench as judgebench_scoring
from .scoring import pairwise as pairwise_scoring
from .scoring import ppe_correctness as ppe_correctness_scoring
from .scoring import ppe_preference as ppe_preference_scoring
from .scoring import prmbench as prmbench_scoring
from .scoring import processbench as processbench_scoring
from .scoring import rewardbench as rewardbench_scoring
from .scoring import rewardbench2 as rewardbench2_scoring
from .scoring import rmb as rmb_scoring
from .scoring import rmbench as rmbench_scoring
from .scoring.types import Records

if TYPE_CHECKING:
    from rich.table import Table


@dataclass(frozen=True)
class RunMeta:
    """What a benchmark's own result files say about the run."""

    model: str
    model_type: str  # reward | dpo | judge | baseline
    dpo_reward: str = "ratio"
    chat_template: str | None = None  # None: the model's own template
    heatmaps: bool = True  # RM-Bench's heatmap PNGs (matplotlib: about a second per run)


# a benchmark's own result files: (run directory, run, summary, examples by id, scores) -> the files written
WriteFiles = Callable[[Path, RunMeta, dict, Mapping[str, Example], Sequence[PromptScores]], list[Path]]


@dataclass(frozen=True)
class HubSource:
    """Where `data fetch` and a run without local data find (part of) the benchmark on the Hugging Face hub."""

    repo: str
    patterns: tuple[str, ...]  # the files, as glob patterns of their paths in the repository
    folder: str = ""  # the sub-folder of data/<benchmark> `data fetch` puts them in ("": the folder itself)


@dataclass(frozen=True)
class Benchmark:
    name: str
    group_field: str  # what a per-sample line calls its group: "domain" | "subset"
    files_in: Callable[[Path], list[Path]]  # the benchmark's data files in a directory
    # one data record (file, index) -> validated example, or None for a record the benchmark does not score
    parse_record: Callable[[Any, Path, int], Example | None]
    hub: tuple[HubSource, ...]  # every part downloaded by `data fetch`; () when the data is the user's own
    expected_groups: tuple[str, ...]  # groups a complete run scores (a missing one makes the run partial)
    score: Callable[..., dict]  # (records, seed=, samples=, lengths=) -> summary; pure
    sample_line: Callable[[Example, PromptScores], dict[str, Any]]  # one line of samples.jsonl
    # one record of a score file -> its scores, None when the record is in none of this benchmark's layouts
    read_record: Callable[[dict[str, Any], str, int, str | None], PromptScores | None]
    table: Callable[[dict, str], Table]  # the summary as a terminal table
    headline: Callable[[dict], list[tuple[str, float | None]]]  # compare's columns: (name, fraction)
    write_files: WriteFiles
    judge_mode: JudgeMode = "pairwise"  # how a generative judge scores a prompt
    scored_groups: Callable[[dict], list[str]] = field(default=lambda s: [])  # the groups a summary scored
    # a results file's object (subset scores, e.g. eval-set/<model>.json) -> its summary; None: not this benchmark's
    results_summary: Callable[[dict[str, Any], str], dict | None] | None = None
    # compare's significance: per-prompt values (n, k) whose group means (and the groups' sizes) `headline_numbers`
    # turns into the headline numbers (compare's columns, plus any finer ones) exactly as `score` aggregates them;
    # None where a headline number is no function of group means (RewardBench 2's Ties): no significance test
    prompt_values: Callable[..., np.ndarray] | None = None  # (records, threshold= for a process benchmark)
    headline_numbers: Callable[[Mapping[str, np.ndarray], Mapping[str, int]], dict[str, np.ndarray]] | None = None
    # the summary's 95% intervals of the headline numbers (compare's chart, the report page)
    headline_intervals: Callable[[dict], dict[str, list[float]]] = field(default=lambda s: {})
    # the report page: the summary as rows (report/table.py), names of a side's responses (RM-Bench styles; empty
    # for one pair) and the 3x3 matrices
    summary_rows: Callable[[dict], tuple[list[str], list[dict]]] = field(default=lambda s: ([], []))
    response_labels: tuple[str, ...] = ()
    subgroup_field: str = ""  # what an Example's subgroup is: "subdomain" | "section"; "" when it has none
    matrices: Callable[[dict], dict[str, dict]] = field(default=lambda s: {})  # group -> {"matrix", "n"}
    # every chosen response is compared with every rejected one (what the report page lists); not RewardBench 2,
    # which ranks one correct answer among several
    chosen_vs_rejected: bool = True
    # the record fields its loader reads: the keys `data_fields` may map (another key is a mistake, e.g. a typo)
    fields: tuple[str, ...] = ()
    unscored: str = ""  # which records `parse_record` leaves out, and why (said in the summary when any are)
    # why a later record with an id seen before is left out ("": a repeated id is an error)
    duplicates: str = ""
    data_notes: Callable[[Sequence[Example]], list[str]] = field(default=lambda e: [])  # quirks the summary states
    # a process benchmark (PRMBench, ProcessBench): each example is one solution's steps, scored by a process model
    # kind (model_kinds.base.ModelKind.process) into PromptScores.steps
    process: bool = False


def _rmbench_groups(summary: dict) -> list[str]:
    return list(summary.get("domains", {}))


def _subset_groups(summary: dict) -> list[str]:
    return list(summary.get("subsets", {}))


def _rmbench_matrices(summary: dict) -> dict[str, dict]:
    """Each domain's 3x3 matrix and n, then the overall one (what the report draws as heatmaps)."""
    panels = {d: v for d, v in summary.get("domains", {}).items() if "matrix" in v}
    if "matrix" in summary.get("overall", {}):
        panels["overall"] = summary["overall"]
    return {name: {"matrix": v["matrix"], "n": v.get("n")} for name, v in panels.items()}


def _rmbench_headline(summary: dict) -> list[tuple[str, float | None]]:
    domains = summary.get("domains", {})
    overall = summary.get("overall", {})
    cols = [(d, domains[d]["avg"] if d in domains else None) for d in C.RMBENCH_DOMAINS]
    return cols + [(level, overall.get(level)) for level in (*rmbench_scoring.LEVELS, "avg")]


def _rewardbench_headline(summary: dict) -> list[tuple[str, float | None]]:
    sections = summary.get("sections", {})
    names = [
        *C.REWARDBENCH_SECTIONS,
        *([C.REWARDBENCH_PRIOR_SECTION] if C.REWARDBENCH_PRIOR_SECTION in sections else []),
    ]
    return [(name, sections.get(name)) for name in names] + [("score", summary.get("score"))]


def _rewardbench2_headline(summary: dict) -> list[tuple[str, float | None]]:
    subsets = summary.get("subsets", {})
    return [(name, subsets.get(name)) for name in C.REWARDBENCH2_SUBSETS] + [("score", summary.get("score"))]


def _judgebench_headline(summary: dict) -> list[tuple[str, float | None]]:
    """Each category, then the overall accuracy JudgeBench reports (every pair weighs the same)."""
    return [*summary.get("subsets", {}).items(), ("accuracy", summary.get("accuracy"))]


def _judgebench_line(example: Example, scores: PromptScores) -> dict[str, Any]:
    return pairwise_files.line(example, scores, name="judgebench")


def _judgebench_read(rec: dict[str, Any], where: str, index: int, domain: str | None) -> PromptScores | None:
    return pairwise_files.read(rec, where, index, domain, name="judgebench")


def _pairwise_headline(summary: dict) -> list[tuple[str, float | None]]:
    subsets = summary.get("subsets", {})
    tail = [("accuracy", summary.get("accuracy")), ("macro", summary.get("macro_accuracy"))]
    return [(name, value) for name, value in subsets.items()] + tail


def _rmbench_files(
    out: Path, meta: RunMeta, summary: dict, examples: Mapping[str, Example], scores: Sequence[PromptScores]
) -> list[Path]:
    from .report.heatmap import write_heatmaps  # matplotlib: imported only when a run writes its files

    heatmaps = write_heatmaps(summary, out, meta.model) if meta.heatmaps else []
    return [*heatmaps, rmbench_files.write_results(out, examples, scores)]


def _reward_bench_files(module: ModuleType) -> WriteFiles:
    """The eval-set files of RewardBench or RewardBench 2 (`module`: its score_files module)."""

    def write(out: Path, meta: RunMeta, summary: dict, examples: Mapping[str, Example], scores: Records) -> list[Path]:
        kind = module.model_type(meta.model_type, meta.dpo_reward)
        return module.write_files(out, meta.model, kind, summary, scores, meta.chat_template or "tokenizer")

    return write


def _no_files(
    out: Path, meta: RunMeta, summary: dict, examples: Mapping[str, Example], scores: Sequence[PromptScores]
) -> list[Path]:
    return []


def _rmb_table(summary: dict, title: str) -> Table:
    from .report.rmb_table import rmb_table

    return rmb_table(summary, title)


def _rmb_rows(summary: dict) -> tuple[list[str], list[dict]]:
    from .report.rmb_table import rmb_rows

    return rmb_rows(summary)


def _hub_parquet(repo: str, *splits: str) -> HubSource:
    """A hub dataset's parquet shards of these splits (`data/<split>-00000-of-00001.parquet`)."""
    return HubSource(repo, tuple(f"data/{split}-*.parquet" for split in splits))


def _modules(data: ModuleType, scoring: ModuleType, files: ModuleType | None = None) -> dict[str, Any]:
    """What a benchmark's loader (`files_in`, `parse_record`), scoring module (`score`, and where it has them
    `prompt_values`, `headline_numbers`, `headline_intervals`, `headline`) and per-sample module (`line`, `read`)
    give its registry entry."""
    found: dict[str, Any] = {"files_in": data.files_in, "parse_record": data.parse_record, "score": scoring.score}
    found |= {"sample_line": files.line, "read_record": files.read} if files else {}
    optional = ("prompt_values", "headline_numbers", "headline_intervals", "headline")
    return found | {name: getattr(scoring, name) for name in optional if hasattr(scoring, name)}


def _one_pair(**fields: Any) -> Benchmark:
    """A benchmark of one chosen-rejected pair per prompt in named subsets (your own pairs, JudgeBench): the
    pairwise tables, significance and report rows, and no files of its own."""
    shared: dict[str, Any] = {"group_field": "subset", "table": table.pairwise_table, "write_files": _no_files,
              "scored_groups": _subset_groups, "summary_rows": table.pairwise_rows}  # fmt: skip
    return Benchmark(**(shared | _modules(pairwise_data, pairwise_scoring, pairwise_files) | fields))


def _process(**fields: Any) -> Benchmark:
    """A process benchmark (a solution's steps per example): no files of its own, no chosen-rejected pairs."""
    shared: dict[str, Any] = {"write_files": _no_files, "chosen_vs_rejected": False, "process": True}
    return Benchmark(**(shared | fields))


REGISTRY: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark(
            name="rm-bench",
            **_modules(rmbench_data, rmbench_scoring, rmbench_files),
            fields=("id", "prompt", "chosen", "rejected", "domain"),
            group_field="domain",
            subgroup_field="subdomain",
            hub=(HubSource(C.RMBENCH_HUB_REPO, (C.RMBENCH_TOTAL_FILE,)),),
            expected_groups=C.RMBENCH_DOMAINS,
            table=table.rmbench_table,
            headline=_rmbench_headline,
            write_files=_rmbench_files,
            scored_groups=_rmbench_groups,
            summary_rows=table.rmbench_rows,
            response_labels=C.RMBENCH_STYLES,
            matrices=_rmbench_matrices,
        ),
        Benchmark(
            name="reward-bench",
            **_modules(rewardbench_data, rewardbench_scoring, rewardbench_files),
            fields=("id", "prompt", "chosen", "rejected", "subset"),
            group_field="subset",
            subgroup_field="section",
            hub=(
                _hub_parquet(C.REWARDBENCH_HUB_REPO, C.REWARDBENCH_HUB_SPLIT),
                _hub_parquet(C.REWARDBENCH_PRIOR_HUB_REPO, *C.REWARDBENCH_PRIOR_SUBSETS),
            ),
            expected_groups=tuple(s for subsets in C.REWARDBENCH_SECTIONS.values() for s in subsets),
            table=table.rewardbench_table,
            headline=_rewardbench_headline,
            write_files=_reward_bench_files(rewardbench_files),
            scored_groups=_subset_groups,
            results_summary=rewardbench_files.results_summary,
            summary_rows=table.rewardbench_rows,
        ),
        Benchmark(
            name="reward-bench-2",
            **_modules(rewardbench2_data, rewardbench2_scoring, rewardbench2_files),
            fields=("id", "prompt", "chosen", "rejected", "subset", "num_correct", "models"),
            group_field="subset",
            hub=(_hub_parquet(C.REWARDBENCH2_HUB_REPO, C.REWARDBENCH2_HUB_SPLIT),),
            expected_groups=C.REWARDBENCH2_SUBSETS,
            table=table.rewardbench2_table,
            headline=_rewardbench2_headline,
            write_files=_reward_bench_files(rewardbench2_files),
            judge_mode="rating",
            scored_groups=_subset_groups,
            results_summary=rewardbench2_files.results_summary,
            chosen_vs_rejected=False,
        ),
        _one_pair(
            name="judgebench",
            fields=("pair_id", "source", "question", "response_A", "response_B", "label"),
            judge_mode="judgebench",
            files_in=judgebench_data.files_in,
            parse_record=judgebench_data.parse_record,
            hub=(_hub_parquet(C.JUDGEBENCH_HUB_REPO, *C.JUDGEBENCH_SPLITS),),
            expected_groups=C.JUDGEBENCH_CATEGORIES,
            score=judgebench_scoring.score,
            sample_line=_judgebench_line,
            read_record=_judgebench_read,
            headline=_judgebench_headline,
        ),
        _one_pair(
            name="pairwise",
            fields=("id", "prompt", "chosen", "rejected", "subset"),
            hub=(),
            expected_groups=(),
            headline=_pairwise_headline,
        ),
        Benchmark(
            name="ppe-preference",
            **_modules(ppe_preference_data, ppe_preference_scoring, ppe_preference_files),
            fields=("question_id", "winner", "prompt", "response_1", "response_2", "language", *C.PPE_FLAGS),
            group_field="group",
            hub=(_hub_parquet(C.PPE_PREFERENCE_HUB_REPO, C.PPE_PREFERENCE_HUB_SPLIT),),
            expected_groups=(),
            table=ppe_table.preference_table,
            write_files=_no_files,
            scored_groups=lambda s: list(s.get("categories", {})),
            summary_rows=ppe_table.preference_rows,
            unscored="human ties (winner 'tie' or 'tie (bothbad)'): PPE's accuracy counts decisive votes only",
        ),
        Benchmark(
            name="ppe-correctness",
            **_modules(ppe_correctness_data, ppe_correctness_scoring, ppe_correctness_files),
            fields=("question_id", "model_name", "prompt", "scores", "sampled_conflict_pairs"),
            group_field="set",
            hub=tuple(
                HubSource(repo, (f"data/{C.PPE_CORRECTNESS_HUB_SPLIT}-*.parquet",), folder=name)
                for name, repo in C.PPE_CORRECTNESS_HUB_REPOS.items()
            ),
            expected_groups=C.PPE_CORRECTNESS_SETS,
            table=ppe_table.correctness_table,
            write_files=_no_files,
            scored_groups=lambda s: list(s.get("sets", {})),
            summary_rows=ppe_table.correctness_rows,
        ),
        Benchmark(
            name="rmb",
            **_modules(rmb_data, rmb_scoring, rmb_files),
            group_field="category_path",
            hub=(),  # RMB is published in its GitHub repository only (data/README.md)
            expected_groups=C.RMB_CATEGORY_PATHS,
            table=_rmb_table,
            write_files=_no_files,
            scored_groups=lambda s: list(s.get("scenarios", {})),
            summary_rows=_rmb_rows,
        ),
        _process(
            name="prmbench",
            **_modules(prmbench_data, prmbench_scoring),
            sample_line=process_files.prmbench_line,
            read_record=process_files.prmbench_read,
            fields=prmbench_data.REQUIRED,
            group_field="classification",
            hub=(),  # published in its GitHub repository (data/README.md)
            expected_groups=C.PRMBENCH_CLASSES,
            table=process_table.prmbench_table,
            scored_groups=lambda s: list(s.get("classes", {})),
            summary_rows=process_table.prmbench_rows,
            duplicates="a repeated id: PRMBench's loader keeps the first record of each id",
            data_notes=prmbench_data.data_notes,
        ),
        _process(
            name="processbench",
            **_modules(processbench_data, processbench_scoring),
            sample_line=process_files.processbench_line,
            read_record=process_files.processbench_read,
            fields=processbench_data.REQUIRED,
            group_field="split",
            hub=(HubSource(C.PROCESSBENCH_HUB_REPO, tuple(f"{split}.json" for split in C.PROCESSBENCH_SPLITS)),),
            expected_groups=C.PROCESSBENCH_SPLITS,
            table=process_table.processbench_table,
            scored_groups=lambda s: list(s.get("splits", {})),
            summary_rows=process_table.processbench_rows,
        ),
    )
}
NAMES = tuple(REGISTRY)


def get(name: str) -> Benchmark:
    """The registered benchmark of this name; ConfigError naming the known ones otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown benchmark {name!r} (known: {', '.join(NAMES)})") from None


def of_summary(summary: Any, where: str) -> Benchmark:
    """The benchmark a summary.json belongs to; a DataError naming the file otherwise."""
    from .errors import DataError

    name = summary.get("benchmark") if isinstance(summary, dict) else None
    if name not in REGISTRY:
        raise DataError(f"{where}: not a summary of a known benchmark ({', '.join(NAMES)})")
    return REGISTRY[name]
