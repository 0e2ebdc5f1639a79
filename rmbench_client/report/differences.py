"""compare's significance: the runs' per-prompt scores (the samples.jsonl beside each summary), the paired
differences of every headline number against the first run (scoring/significance.py), and how they are shown.

Differences are in percent points: `+3.2 [1.0, 5.1] p=0.004 *` = run minus first run, the paired bootstrap 95%
interval, the paired permutation test's p-value, and `*` when p < 0.05.
"""

from __future__ import annotations

import functools
from pathlib import Path

from rich.table import Table

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..benchmarks.shared import significance
from ..benchmarks.shared.formatting import fitted_tables
from ..data_hashes import same_prompts
from ..errors import DataError
from ..examples import PromptScores
from ..score_files import read_scores

Run = tuple[str, dict]


def samples_file(raw: str | Path) -> Path:
    """The samples.jsonl of a run directory, or the one beside a summary file."""
    path = Path(raw)
    return (path if path.is_dir() else path.parent) / C.SAMPLES_FILE


def load_samples(runs: list[Run], paths: list[str]) -> tuple[list[list[PromptScores]] | None, list[str]]:
    """Each run's per-prompt scores over the prompts that are the same texts in every run, and notes on what was
    left out; None when the differences cannot be tested (a run without its samples.jsonl, a benchmark whose
    headline numbers the test cannot recompute, runs over different data)."""
    bench = benchmarks.of_summary(runs[0][1], runs[0][0])
    if bench.prompt_values is None or bench.headline_numbers is None:
        return None, [f"{bench.name}: its headline numbers are not means over prompts; differences are not tested"]
    if len(thresholds(runs)) > 1:
        return None, ["the runs judged steps at different thresholds: differences are not tested"]
    out = []
    for raw in paths:
        file = samples_file(raw)
        if not file.is_file():
            return None, [f"no {C.SAMPLES_FILE} beside {raw}: differences are not tested for significance"]
        out.append(read_scores([file])[1])
    return paired_scores(runs, out)


def paired_scores(
    runs: list[Run], scores: list[list[PromptScores]]
) -> tuple[list[list[PromptScores]] | None, list[str]]:
    """The runs' scores without the prompts whose texts differ between runs (same id, other content: two files
    numbered by index), with a note; None and a note when no scored prompt is the same in every run."""
    ids = set.intersection(*({s.id for s in run} for run in scores))
    if not ids:  # the table still shows each run's numbers; say what each scored
        each = "; ".join(f"{name}: {len(run)} ({_some_ids(run)})" for (name, _), run in zip(runs, scores, strict=True))
        return None, [f"the runs share no prompt id, so differences are not tested; prompts scored by {each}"]
    same, notes = same_prompts(runs, ids)
    if ids and not same:
        return None, ["the runs scored different data (no prompt has the same content in every run): differences "
                      "are not tested"]  # fmt: skip
    differ = ids - same
    return [[s for s in run if s.id not in differ] for run in scores], notes


def _some_ids(run: list[PromptScores], shown: int = 3) -> str:
    ids = [s.id for s in run[:shown]]
    return "ids " + ", ".join(ids) + (", ..." if len(run) > shown else "")


def differences(runs: list[Run], scores: list[list[PromptScores]], seed: int = C.BOOTSTRAP_SEED) -> dict:
    """scoring.significance.compare through the runs' benchmark, plus "reference" (the first run's name) and
    "runs" (the names compared with it)."""
    bench = benchmarks.of_summary(runs[0][1], runs[0][0])
    if bench.prompt_values is None or bench.headline_numbers is None:
        raise DataError(f"{bench.name}: its headline numbers are not means over prompts; no significance test")
    values = bench.prompt_values
    if bench.process:  # a step's judgement depends on the runs' threshold (the same for all: load_samples)
        found = thresholds(runs)
        if len(found) != 1:
            raise DataError("the runs judged steps at different thresholds: no significance test")
        values = functools.partial(bench.prompt_values, threshold=found.pop())
    result = significance.compare(scores, values, bench.headline_numbers, seed=seed)
    return result | {"reference": runs[0][0], "runs": [name for name, _ in runs[1:]]}


def thresholds(runs: list[Run]) -> set[float]:
    """The process benchmarks' step thresholds of the runs (empty for other benchmarks)."""
    return {float(s["threshold"]) for _, s in runs if "threshold" in s}


def cell(d: dict | None) -> str:
    """'+3.2 [1.0, 5.1] p=0.004 *' (percent points); '' without a value."""
    if d is None:
        return ""
    lo, hi = d["ci"]
    mark = " *" if d["significant"] else ""
    return f"{100 * d['diff']:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] {p_text(d['p'])}{mark}"


def p_text(p: float) -> str:
    """'p=0.03'; 'p<0.001' below that (the permutation test's resolution is 1/5001)."""
    return "p<0.001" if p < 0.001 else f"p={p:.2g}"


def names(result: dict) -> list[str]:
    """The headline numbers compared, in the benchmark's order."""
    return list(dict.fromkeys(n for diffs in result["differences"] for n in diffs))


def caption(result: dict) -> str:
    left = [
        f"{run}: {k}" for run, k in zip([result["reference"], *result["runs"]], result["left_out"], strict=True) if k
    ]
    text = (
        f"difference against {result['reference']} in percent points, over the {result['shared']} prompts every run "
        "scored; [95% paired bootstrap interval]; p: paired permutation test; * p < 0.05"
    )
    return text + (f"; left out (scored by only some runs): {', '.join(left)}" if left else "")


def tables(result: dict, width: int = 80) -> list[Table]:
    """One row per headline number, one column per run compared with the first (further tables where the runs do
    not fit in `width`); `caption(result)` says what the cells are (printed under them: a table's caption would
    fold a long model name at the table's width)."""
    header = ["number", *result["runs"]]
    rows = [[name, *(cell(d.get(name)) for d in result["differences"])] for name in names(result)]
    return fitted_tables(f"differences against {result['reference']}", header, rows, width)


def markdown(result: dict) -> str:
    lines = [
        "",
        f"Differences against {result['reference']} ({caption(result).split(' in ', 1)[1]})",
        "",
        "| number | " + " | ".join(r.replace("|", "\\|") for r in result["runs"]) + " |",
        "| --- |" + " ---: |" * len(result["runs"]),
    ]
    for name in names(result):
        lines.append(f"| {name} | " + " | ".join(cell(d.get(name)) or "–" for d in result["differences"]) + " |")
    return "\n".join(lines) + "\n"


CSV_FIELDS = ("diff", "low", "high", "p", "significant")


def csv_header(result: dict) -> list[str]:
    """Extra CSV columns: for every headline number its difference against the first run (percent points), the
    interval, p and "yes"/"no"; then the number of shared prompts."""
    return [f"{name} {field}" for name in names(result) for field in CSV_FIELDS] + ["shared prompts"]


def csv_cells(result: dict, run_index: int) -> list[str]:
    """The extra cells of run `run_index` (empty for the first run: the reference)."""
    if run_index == 0:
        return [""] * (len(names(result)) * len(CSV_FIELDS)) + [str(result["shared"])]
    diffs = result["differences"][run_index - 1]
    cells: list[str] = []
    for name in names(result):
        d = diffs.get(name)
        if d is None:
            cells += [""] * len(CSV_FIELDS)
            continue
        yes = "yes" if d["significant"] else "no"
        cells += [f"{100 * d['diff']:.2f}", f"{100 * d['ci'][0]:.2f}", f"{100 * d['ci'][1]:.2f}", f"{d['p']:.4g}", yes]
    return cells + [str(result["shared"])]
