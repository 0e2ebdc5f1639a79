"""What a benchmark is: the `Benchmark` every benchmark folder (and every plug-in) hands the registry, and the types
its functions take.

A benchmark is data and pure functions: how its files are found and read into `Example`s, how per-prompt scores
become its summary (`score`, pure numpy), how a prompt's scores are written as a line of `samples.jsonl` and read
back, its own file formats, its terminal table and what reports show. The machinery that runs, compares and
reports asks these functions and never which benchmark it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, NotRequired, Protocol, TypedDict, TypeVar, cast

import msgspec

from ..examples import Example, PromptScores

if TYPE_CHECKING:
    import numpy as np
    from rich.table import Table

Records = Sequence[PromptScores]  # one prompt's scores each
Samples = int | None  # bootstrap samples; None: the defaults (constants.BOOTSTRAP_SAMPLES, LENGTH_BOOTSTRAP_SAMPLES)
Lengths = Mapping[str, tuple[Sequence[int], Sequence[int]]]  # prompt id -> (chosen lengths, rejected lengths)
Interval = list[float]  # a 95% interval [low, high] (a list: the summary is JSON)

# how a benchmark asks a generative judge: compare pairs, rate answers one by one (RewardBench 2), or compare in
# both orders combined as JudgeBench does
JudgeMode = Literal["pairwise", "rating", "judgebench"]
# how a process benchmark judges a step correct from its score: "above" the threshold (PRMBench), or "not below"
# it (ProcessBench: the first step below the threshold is the predicted wrong one)
StepRule = Literal["above", "not below"]


class Summary(msgspec.Struct, kw_only=True):
    """A benchmark's numbers, as `score` returns them and `summary.json` begins: each benchmark's own subclass,
    its fields in the order they are written. A key the summary holds only sometimes is typed `T | UnsetType`
    with the default `msgspec.UNSET`: left unset, it is not written (and absent, it reads back unset)."""

    benchmark: str


S = TypeVar("S")  # a benchmark's summary: its `Summary` subclass (or a plain dict)
S_in = TypeVar("S_in", contravariant=True)  # the summary a `Shows` draws


class Row(TypedDict):
    """One row of a summary's table (the terminal table, the report page's JSON): a group or a total, a cell per
    column (`[value]`, `[value, low, high]`, or None where the group has no value) and its number of prompts;
    `why`: a column's reason for a None cell where the figure is undefined (not merely absent)."""

    name: str
    values: list[list[float] | None]
    n: int | None
    total: bool
    why: NotRequired[dict[str, str]]


@dataclass(frozen=True)
class RunMeta:
    """What a benchmark's own result files say about the run."""

    model: str
    model_type: str  # reward | dpo | judge | baseline
    dpo_reward: str = "ratio"
    chat_template: str | None = None  # None: the model's own template
    heatmaps: bool = True  # RM-Bench's heatmap PNGs (matplotlib: about a second per run)


@dataclass(frozen=True)
class HubSource:
    """Where `data fetch` and a run without local data find (part of) the benchmark on the Hugging Face hub."""

    repo: str
    patterns: tuple[str, ...]  # the files, as glob patterns of their paths in the repository
    folder: str = ""  # the sub-folder of data/<benchmark> `data fetch` puts them in ("": the folder itself)

    @classmethod
    def parquet(cls, repo: str, *splits: str) -> HubSource:
        """A hub dataset's parquet shards of these splits (`data/<split>-00000-of-00001.parquet`)."""
        return cls(repo, tuple(f"data/{split}-*.parquet" for split in splits))


def _no_files(out: Path, meta: RunMeta, summary: Any, examples: Mapping[str, Example], scores: Records) -> list[Path]:
    return []


class Numbers(Protocol[S]):
    """How a benchmark's numbers are computed and named: its `scoring.py` module (or any object with these names).
    `score` is pure: per-prompt scores -> the summary (`records, seed=, samples=, lengths=[, threshold=]`)."""

    @property
    def SUMMARY(self) -> type[S]: ...  # noqa: N802 (a module's constant: the summary class `score` returns)

    @property
    def score(self) -> Callable[..., S]: ...

    def headline(self, summary: S, /) -> list[tuple[str, float | None]]: ...  # compare's columns; the last leads

    def headline_intervals(self, summary: S, /) -> dict[str, Interval]: ...  # their 95% intervals, by name

    def scored_groups(self, summary: S, /) -> list[str]: ...

    # compare's significance: per-prompt values (n, k) and the headline numbers from their group means and sizes,
    # exactly as `score` aggregates them; None where a headline number is no function of group means
    @property
    def prompt_values(self) -> Callable[..., np.ndarray] | None: ...

    @property
    def headline_numbers(
        self,
    ) -> Callable[[Mapping[str, np.ndarray], Mapping[str, int]], dict[str, np.ndarray]] | None: ...


class Shows(Protocol[S_in]):
    """How a summary is shown: its `table.py` module. `rows` feed the report page and the API's groups; `table` is
    the terminal's (`shared.tables.rows_table` draws it from the rows)."""

    def rows(self, summary: S_in, /) -> tuple[list[str], list[Row]]: ...

    def table(self, summary: S_in, title: str, /) -> Table: ...


class Lines(Protocol):
    """A prompt's line of samples.jsonl and its reader (`score`): its `files.py` module. `read` returns None for a
    record that is not the benchmark's own."""

    def line(self, example: Example, scores: PromptScores, /) -> dict[str, Any]: ...

    def read(self, rec: dict[str, Any], where: str, index: int, domain: str | None, /) -> PromptScores | None: ...


@dataclass(frozen=True)
class Kind:
    """A family of benchmarks (`benchmarks/kinds/`): pairs, best-of-N lists, per-step labels. A benchmark of a kind
    gets from it what the kind implies (how its numbers are computed and shown, its per-sample line and reader) and
    declares only what it decides; a kind's `score` is told the benchmark's name (`benchmark=`)."""

    name: str
    numbers: Numbers[Any] | None  # None: each benchmark of the kind computes its own
    shows: Shows[Any] | None
    lines: Callable[[str, str], Lines]  # (the benchmark's name, its group field) -> its line and reader
    chosen_vs_rejected: bool = True  # every chosen response is compared with every rejected one
    process: bool = False  # one solution's steps per example, scored by a process model kind
    # one chosen response ranked among several rejected ones: the report page lists the chosen against each
    best_of_n: bool = False
    # the responses are all in `chosen` and `pairs` holds (better, worse) indices among them: a ranking's rated pairs
    ranking: bool = False
    judge_mode: JudgeMode | None = None  # how a judge scores a benchmark of the kind (None: the benchmark says)


def _given(*args: Any, **kwargs: Any) -> Any:
    """Stands for a part the benchmark's kind (or its `numbers`, `shows`, `lines`) gives: replaced at construction."""
    raise AssertionError("a Benchmark part left unset")  # pragma: no cover (construction refuses one left unset)


def _numbers(numbers: Numbers[Any]) -> dict[str, Any]:
    return {
        "score": numbers.score,
        "summary_type": numbers.SUMMARY,
        "headline": numbers.headline,
        "headline_intervals": numbers.headline_intervals,
        "scored_groups": numbers.scored_groups,
        "prompt_values": numbers.prompt_values,
        "headline_numbers": numbers.headline_numbers,
    }


def _shows(shows: Shows[Any]) -> dict[str, Any]:
    return {"summary_rows": shows.rows, "table": shows.table}


def _lines(lines: Lines) -> dict[str, Any]:
    return {"sample_line": lines.line, "read_record": lines.read}


# the parts a benchmark must have, and those it may lack (what they are then)
_REQUIRED = ("score", "summary_type", "sample_line", "read_record", "table", "headline", "scored_groups")
_OPTIONAL: dict[str, Any] = {
    "prompt_values": None,
    "headline_numbers": None,
    "headline_intervals": lambda s: {},
    "summary_rows": lambda s: ([], []),
}


@dataclass(frozen=True, kw_only=True)
class Benchmark(Generic[S]):
    """One benchmark. The built-ins are in `rmbench_client.benchmarks.<name>`; a plug-in is the same object from
    another package, through the entry-point group `rmbench_client.benchmarks` (docs/plugins.md).

    A benchmark declares what it decides: its name and title, its data (`files_in`, `parse_record`, `fields`), its
    groups, its kind. Each of its parts (score ... read_record below) comes from the first of: the part given by
    name; its `numbers`, `shows` or `lines` (a module of its folder each: scoring.py, table.py, files.py); its
    `kind`. A required part that none of them gives is a TypeError at construction."""

    name: str  # what configs and flags call it: lowercase letters, digits and '-'
    title: str  # its name in prose (--help, tables)
    layout: str  # what --data (or data/<benchmark>) holds for it: said where its data is missing
    group_field: str  # what a per-sample line calls its group: "domain" | "subset" | ...
    files_in: Callable[[Path], list[Path]]  # the benchmark's data files in a directory
    # one data record (file, index) -> validated example, or None for a record the benchmark does not score
    parse_record: Callable[[Any, Path, int], Example | None]
    # where the parts come from when not given one by one (init-only: not kept on the object)
    kind: InitVar[Kind | None] = None
    numbers: InitVar[Numbers[S] | None] = None
    shows: InitVar[Shows[S] | None] = None
    lines: InitVar[Lines | None] = None
    # --- its parts -------------------------------------------------------------------------------------------------
    score: Callable[..., S] = _given  # (records, seed=, samples=, lengths=[, threshold=]) -> summary; pure
    summary_type: type[S] = field(default=cast(Any, _given))  # what `score` returns; summary.json is read back as it
    sample_line: Callable[[Example, PromptScores], dict[str, Any]] = _given  # one line of samples.jsonl
    # one record of a score file -> its scores, None when the record is in none of this benchmark's layouts
    read_record: Callable[[dict[str, Any], str, int, str | None], PromptScores | None] = _given
    table: Callable[[S, str], Table] = _given  # the summary as a terminal table (rich: imported where drawn)
    headline: Callable[[S], list[tuple[str, float | None]]] = (
        _given  # compare's columns, (name, fraction); the last leads
    )
    scored_groups: Callable[[S], list[str]] = _given  # the groups a summary scored
    # compare's significance: per-prompt values (n, k) whose group means (and the groups' sizes) `headline_numbers`
    # turns into the headline numbers (compare's columns, plus any finer ones) exactly as `score` aggregates them;
    # None where a headline number is no function of group means (RewardBench 2's Ties): no significance test
    prompt_values: Callable[..., np.ndarray] | None = _given  # (records[, threshold=] for a process benchmark)
    headline_numbers: Callable[[Mapping[str, np.ndarray], Mapping[str, int]], dict[str, np.ndarray]] | None = _given
    # the summary's 95% intervals of the headline numbers (compare's chart, the report page); default: none
    headline_intervals: Callable[[S], dict[str, Interval]] = _given
    # the report page: the summary as rows (default: none)
    summary_rows: Callable[[S], tuple[list[str], list[Row]]] = _given
    # --- its facts -------------------------------------------------------------------------------------------------
    hub: tuple[HubSource, ...] = ()  # every part downloaded by `data fetch`; () when the data is the user's own
    expected_groups: tuple[str, ...] = ()  # groups a complete run scores (a missing one makes the run partial)
    # the benchmark's own result files: (run directory, run, summary, examples by id, scores) -> the files written
    write_files: Callable[[Path, RunMeta, S, Mapping[str, Example], Records], list[Path]] = _no_files
    own_outputs: tuple[str, ...] = ()  # their names in a run directory (globs allowed): go with the earlier result
    judge_mode: JudgeMode = "pairwise"  # how a generative judge scores a prompt
    # a results file's object (subset scores, e.g. eval-set/<model>.json) -> its summary; None: not this benchmark's
    results_summary: Callable[[dict[str, Any], str], S | None] | None = None
    chart_columns: tuple[str, ...] = ()  # compare's chart: these headline columns (): every one
    # the report page: names of a side's responses (RM-Bench styles; empty for one pair) and the 3x3 matrices drawn
    # as heatmaps (group -> {"matrix", "n"})
    response_labels: tuple[str, ...] = ()
    subgroup_field: str = ""  # what an Example's subgroup is: "subdomain" | "section"; "" when it has none
    matrices: Callable[[S], dict[str, dict[str, Any]]] = field(default=lambda s: {})
    # every chosen response is compared with every rejected one (what the report page lists); not a best-of-N
    # list, which ranks one correct answer among several. A kind sets it (and `process`) for its benchmarks
    chosen_vs_rejected: bool = True
    best_of_n: bool = False  # set by its kind: one chosen response against several rejected ones (`Kind`)
    ranking: bool = False  # set by its kind: `pairs` are (better, worse) indices among the responses in `chosen`
    # the record fields its loader reads: the keys `data_fields` may map (another key is a mistake, e.g. a typo)
    fields: tuple[str, ...] = ()
    unscored: str = ""  # which records `parse_record` leaves out, and why (said in the summary when any are)
    # why a later record with an id seen before is left out ("": a repeated id is an error)
    duplicates: str = ""
    data_notes: Callable[[Sequence[Example]], list[str]] = field(default=lambda e: [])  # quirks the summary states
    data_env: str = ""  # an environment variable that names its data directory when --data does not
    default_data: str = ""  # its data when neither --data nor data_env names any (a file-defined benchmark's `data:`)
    # the records of one example spread over several (RewardMATH: one record per solution) gathered into one record
    # each, from a file's records in order, before `parse_record` reads them; None: a record is an example
    gather: Callable[[Iterable[Any], Path], Iterator[Any]] | None = None
    definition: str = ""  # the file a benchmark defined from a file was read from (definitions.py); "" otherwise
    # how a PRM's step scores may become one score per response, by name: its `score` then takes `prm_function=`
    # (RewardMATH's --prm_function choices); () when it scores no step scores
    prm_functions: tuple[str, ...] = ()
    checksums: Mapping[str, str] = field(default_factory=dict)  # file name -> "sha256:<hex>" | "git-sha1:<hex>"
    # a process benchmark (PRMBench, ProcessBench): each example is one solution's steps, scored by a process model
    # kind (model_kinds.base.ModelKind.process) into PromptScores.steps, and judged at a threshold by `step_rule`
    process: bool = False
    step_rule: StepRule = "above"

    def __post_init__(
        self, kind: Kind | None, numbers: Numbers[S] | None, shows: Shows[S] | None, lines: Lines | None
    ) -> None:
        parts: dict[str, Any] = {}
        if kind is not None:
            for fact in ("chosen_vs_rejected", "process", "best_of_n", "ranking"):
                object.__setattr__(self, fact, getattr(kind, fact))
            if kind.judge_mode is not None:
                object.__setattr__(self, "judge_mode", kind.judge_mode)
            if kind.numbers is not None:  # its score told the benchmark's name
                parts |= _numbers(kind.numbers) | {"score": functools.partial(kind.numbers.score, benchmark=self.name)}
            parts |= (_shows(kind.shows) if kind.shows is not None else {}) | _lines(
                kind.lines(self.name, self.group_field)
            )
        parts |= (
            (_numbers(numbers) if numbers else {}) | (_shows(shows) if shows else {}) | (_lines(lines) if lines else {})
        )
        for name in (*_REQUIRED, *_OPTIONAL):
            if getattr(self, name) is _given:
                object.__setattr__(self, name, parts.get(name, _OPTIONAL.get(name, _given)))
        missing = [name for name in _REQUIRED if getattr(self, name) is _given]
        if missing:
            raise TypeError(
                f"benchmark {self.name!r}: no {', '.join(missing)} (give them, or a kind that implies them)"
            )

    def summary_json(self, summary: S) -> dict[str, Any]:
        """The summary as its JSON object (the numbers `summary.json` begins with)."""
        if isinstance(summary, dict):
            return summary
        out: dict[str, Any] = msgspec.to_builtins(summary)
        return out

    def read_summary(self, raw: Mapping[str, Any]) -> S:
        """The typed summary of a summary object (summary.json, `score --json`); fields of the run are ignored."""
        if self.summary_type is dict:
            return dict(raw)  # type: ignore[return-value]
        return msgspec.convert(raw, self.summary_type)

    def leading(self, summary: S) -> tuple[str, float | None]:
        """The one number that stands for the run (`suite`, `watch`, a result's `headline`): the last headline
        column, with its value."""
        columns = self.headline(summary)
        return columns[-1] if columns else ("", None)
