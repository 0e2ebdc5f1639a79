"""Paired significance of the differences between runs scored on the same prompts.

Each run after the first is compared with the first (the reference), on the prompts every run scored (prompts
only some runs scored are left out and counted). For each headline number h (the benchmark's own aggregation of
per-prompt values: RM-Bench domain averages and overall levels, RewardBench sections, score and subsets):

    diff     = h(run) - h(reference)
    interval = paired bootstrap: resample prompt ids within each group (domain / subset), the same ids for both
               runs, recompute both runs' headline numbers; the percentile 95% interval of the difference
    p        = paired permutation (sign-flip) test: under "no difference" a prompt's two values are exchangeable,
               so each prompt's pair is swapped with probability 1/2 and the difference recomputed;
               p = (1 + #{|diff*| >= |diff|}) / (1 + permutations), two-sided
    significant = p < 1 - confidence (0.05)

Why a permutation test rather than McNemar's: it tests every headline number through its own aggregation (weighted
sections, means over matrix cells and domains), not only one accuracy; for a single pairwise accuracy only the
prompts on which the runs disagree change under a swap, which makes it McNemar's exact test, done by resampling.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ... import constants as C
from ...errors import DataError
from ...examples import PromptScores
from . import bootstrap

PromptValues = Callable[[Sequence[PromptScores]], np.ndarray]  # records -> (n, k) per-prompt values
# (group -> (..., k) means, group -> prompts) -> headline numbers
Headline = Callable[[Mapping[str, np.ndarray], Mapping[str, int]], dict[str, np.ndarray]]
_TIE = 1e-12  # permuted differences this close to the observed one count as "as extreme" (float noise)


def shared_prompts(runs: Sequence[Sequence[PromptScores]]) -> tuple[dict[str, list[str]], list[int]]:
    """Group -> ids scored by every run (in the first run's order), and per run how many of its prompts are left
    out; a DataError when two runs put one prompt in different groups or no prompt is shared."""
    ids = [{r.id: r.group for r in run} for run in runs]
    common = set(ids[0]).intersection(*ids[1:])
    for k, run_ids in enumerate(ids[1:], start=1):
        for rid in common:
            if run_ids[rid] != ids[0][rid]:
                raise DataError(f"prompt {rid}: group {ids[0][rid]!r} in run 1 but {run_ids[rid]!r} in run {k + 1}")
    if not common:
        raise DataError("the runs share no scored prompt: nothing to compare")
    groups: dict[str, list[str]] = {}
    for r in runs[0]:
        if r.id in common:
            groups.setdefault(r.group, []).append(r.id)
    return dict(sorted(groups.items())), [len(run_ids) - len(common) for run_ids in ids]


def _values(
    run: Sequence[PromptScores], groups: Mapping[str, list[str]], prompt_values: PromptValues
) -> dict[str, np.ndarray]:
    by_id = {r.id: r for r in run}
    return {g: prompt_values([by_id[i] for i in ids]) for g, ids in groups.items()}


def _p_value(observed: np.ndarray, permuted: np.ndarray) -> float:
    if not np.isfinite(observed):
        return float("nan")
    extreme = np.abs(permuted) >= np.abs(observed) - _TIE
    return float((1 + extreme.sum()) / (1 + len(permuted)))


def compare(
    runs: Sequence[Sequence[PromptScores]],
    prompt_values: PromptValues,
    headline: Headline,
    seed: int = C.BOOTSTRAP_SEED,
    samples: int = C.BOOTSTRAP_SAMPLES,
    permutations: int = C.PERMUTATIONS,
    confidence: float = C.CONFIDENCE,
) -> dict[str, Any]:
    """{"shared": prompts every run scored, "left_out": per run, "differences": per run after the first,
    {number: {"diff", "ci", "p", "significant"}}} (fractions; JSON-ready)."""
    if len(runs) < 2:
        raise DataError("a comparison needs at least two runs")
    groups, left_out = shared_prompts(runs)
    values = [_values(run, groups, prompt_values) for run in runs]
    rng = bootstrap.rng(seed)
    sizes = {g: len(ids) for g, ids in groups.items()}
    # One resample of prompt ids per replicate, the same for every run (paired): counts @ values / n are the means.
    counts = {g: rng.multinomial(n, np.full(n, 1.0 / n), size=samples) for g, n in sizes.items()}
    swaps = {g: (rng.random((permutations, n)) < 0.5).astype(np.float64) for g, n in sizes.items()}
    point = [headline({g: v.mean(axis=0) for g, v in run.items()}, sizes) for run in values]
    reps = [headline({g: counts[g] @ v / sizes[g] for g, v in run.items()}, sizes) for run in values]
    alpha = 1.0 - confidence
    differences = []
    for k in range(1, len(runs)):
        ref, other = values[0], values[k]
        delta = {g: (swaps[g] @ (other[g] - ref[g])) / sizes[g] for g in groups}  # (P, k): mean moved by swaps
        perm_ref = headline({g: ref[g].mean(axis=0) + delta[g] for g in groups}, sizes)
        perm_other = headline({g: other[g].mean(axis=0) - delta[g] for g in groups}, sizes)
        out = {}
        for name, value in point[k].items():
            diff = np.asarray(value - point[0][name])
            p = _p_value(diff, perm_other[name] - perm_ref[name])
            out[name] = {
                "diff": float(diff),
                "ci": bootstrap.interval(reps[k][name] - reps[0][name], confidence),
                "p": p,
                "significant": bool(p < alpha),
            }
        differences.append(out)
    return {"shared": sum(sizes.values()), "left_out": left_out, "differences": differences}
