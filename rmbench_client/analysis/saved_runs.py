"""The API over what is saved, with no server: `rescore` re-scores per-sample files as `rmbench-client score` does,
`compare` sets finished runs side by side as `rmbench-client compare` does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .. import arguments
from .. import constants as C
from ..errors import DataError
from ..results.summary import read_summary
from ..results.typed import Comparison, Estimate, Scores, api_words, in_api_words, scores_of


def rescore(
    paths: str | Path | Sequence[str | Path],
    *,
    domain: str | None = None,
    seed: int = 0,
    threshold: float | None = None,
    benchmark: str | Path | None = None,
    prm_function: str | None = None,
) -> Scores:
    """Re-score saved per-sample files (a run's `samples.jsonl`, a benchmark's own score files, or results files),
    as `rmbench-client score` does. `domain`: RM-Bench's domain for records that carry none; `threshold`: a process
    benchmark's step threshold; `benchmark`: a benchmark's name or file, whose records these are (also those that
    name none; a run's own benchmark file is found beside its samples.jsonl); `prm_function`: how step scores of
    whole responses become one (RewardMATH's PRM files: min, max, prod, geometric_mean, mean, mean_logit,
    mean_odd, last).

    Raises:
        TypeError: `threshold` is no number.
        ConfigError: `seed` is no integer of 0 or more, or `threshold` is outside 0 to 1.
        DataError: a file is unreadable or not a score file (names the file and record).
    """
    from ..blas_threads import few_blas_threads
    from ..results.score_files import summarize

    arguments.seed(seed)
    threshold = arguments.threshold(threshold)
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    if not files:
        raise DataError("rescore needs at least one score file")
    with few_blas_threads(), in_api_words():  # `score`'s checks: its flags named as this function's arguments
        given = str(benchmark) if benchmark is not None else None
        summary = summarize(
            [str(p) for p in files], domain, seed=seed, threshold=threshold, benchmark=given, prm_function=prm_function
        )
    return scores_of(read_summary(summary, ", ".join(map(str, files))))


def compare(runs: Sequence[str | Path], *, seed: int = C.BOOTSTRAP_SEED) -> Comparison:
    """Runs of one benchmark (run directories or summary files; the first is the reference) side by side, as
    `rmbench-client compare` shows them: compare's headline numbers with their intervals, whether each run is
    complete, and each later run's paired differences against the first (with their 95% intervals and p-values;
    `seed`: the resampling's) where its samples.jsonl allows the test.

    Raises:
        TypeError: `runs` is one path, not a sequence of them.
        ConfigError: `seed` is no integer of 0 or more.
        DataError: a path is no run (suite directories: the error names each benchmark's runs to compare
            instead), or the runs are of different benchmarks.
    """
    from ..results.comparison import compared, load_runs, notes

    if isinstance(runs, str | Path):
        raise TypeError(f"compare takes a sequence of runs, not one path: compare([{str(runs)!r}, ...])")
    arguments.seed(seed)
    _not_suites([str(r) for r in runs])
    loaded = load_runs(list(runs))
    paired, why_not = compared(loaded, seed=seed)
    scores = [scores_of(run.summary) for run in loaded]
    columns = tuple(dict.fromkeys(c for s in scores for c, e in s.headlines.items() if e.value is not None))
    return Comparison(
        benchmark=scores[0].benchmark,
        columns=columns,
        models=tuple(run.name for run in loaded),
        rows=tuple({c: s.headlines.get(c, Estimate(None)) for c in columns} for s in scores),
        complete=tuple(bool(run.summary.info.complete) for run in loaded),
        differences=paired.differences if paired else (),
        shared=paired.shared if paired else None,
        left_out=paired.left_out if paired else (),
        notes=tuple(api_words(note) for note in (*notes(loaded), *why_not)),  # `partial`'s words (limit=40)
    )


def _not_suites(paths: list[str]) -> None:
    """Suite directories (runs/<model>: a run per benchmark) are refused with the runs to compare instead, as
    the CLI's `compare` pairs them per benchmark."""
    from ..results.suite import per_benchmark, suite_dirs

    if (suites := suite_dirs(paths)) is None:
        return
    by_name = per_benchmark(suites)[1]
    instead = next(iter(by_name.values()), None)
    hint = f"compare one benchmark's runs, e.g. compare({instead!r})" if instead else "no benchmark scored in each"
    names = ", ".join(by_name) or "none"
    raise DataError(f"{', '.join(paths)}: suite directories, not runs: {hint} (benchmarks: {names})")


__all__ = ["compare", "rescore"]
