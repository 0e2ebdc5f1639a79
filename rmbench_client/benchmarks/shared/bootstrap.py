"""Seeded percentile-bootstrap intervals over prompts.

Every accuracy here is a mean of per-prompt values, so a replicate is the mean of a resample of them;
strata (domains, subsets) are resampled independently and combined per replicate exactly as the point estimate.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ... import constants as C
from ...examples import PromptScores
from .credits import outcomes


def replicate_means(values: np.ndarray, rng: np.random.Generator, samples: int = C.BOOTSTRAP_SAMPLES) -> np.ndarray:
    """`samples` bootstrap means of `values` (shape (n,) or (n, k) -> (samples,) or (samples, k))."""
    n = len(values)
    if n == 0:
        return np.full((samples, *values.shape[1:]), np.nan)
    rows = _rows_per_chunk(n)  # drawn a chunk of replicates at a time: the same draws, bounded memory
    draws = (rng.integers(0, n, size=(min(rows, samples - s), n)) for s in range(0, samples, rows))
    if values.ndim == 1:
        return np.concatenate([values[idx].mean(axis=1) for idx in draws])  # each row summed pairwise
    columns = values.reshape(n, -1).T.copy()  # (k, n): each column contiguous
    means = np.concatenate([_column_means(columns, idx) for idx in draws])
    return means.reshape(samples, *values.shape[1:])


def _column_means(columns: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """(rows, k): `values[idx].mean(axis=1)` bit for bit for the values whose columns are `columns`. That gather
    copies k floats per index (RM-Bench's 4,788 prompts x 3 levels: 0.4 s of CPU, measured by hand); a column at a
    time, indices transposed so that each replicate's sum runs over the draws in the same order (one after another,
    as numpy sums an axis that is not the last), it is 0.06 s."""
    draws = np.ascontiguousarray(idx.T)  # (n, rows)
    sums = np.stack([np.add.reduce(column[draws], axis=0) for column in columns], axis=1)
    means: np.ndarray = sums / idx.shape[1]  # divided as numpy's mean divides
    return means


def _rows_per_chunk(width: int, max_elements: int = C.BOOTSTRAP_CHUNK_ELEMENTS) -> int:
    return max(1, max_elements // max(1, width))


def interval(replicates: np.ndarray, confidence: float = C.CONFIDENCE) -> list[float]:
    """Percentile interval [lo, hi] of bootstrap replicates (a list: the summary is JSON)."""
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(replicates, [tail, 100.0 - tail])
    return [float(lo), float(hi)]


def rng(seed: int = C.BOOTSTRAP_SEED) -> np.random.Generator:
    return np.random.default_rng(seed)


def stratified_chunks(
    sizes: list[int],
    rng: np.random.Generator,
    samples: int = C.BOOTSTRAP_SAMPLES,
    max_elements: int = C.BOOTSTRAP_CHUNK_ELEMENTS,
) -> Iterator[np.ndarray]:
    """Bootstrap row indices into strata laid end to end, `samples` replicates (rows) in chunks of at most
    `max_elements` indices (a large dataset's thousand replicates are never held at once). Each stratum is
    resampled within itself, so a replicate keeps every stratum's size (prompts of one domain or subset stand in
    only for each other)."""
    rows = _rows_per_chunk(sum(sizes), max_elements)
    for start in range(0, samples, rows):
        m = min(rows, samples - start)
        parts, offset = [], 0
        for n in sizes:
            parts.append(offset + rng.integers(0, n, size=(m, n)) if n else np.zeros((m, 0), dtype=np.int64))
            offset += n
        yield np.concatenate(parts, axis=1) if parts else np.zeros((m, 0), dtype=np.int64)


def resample_counts(rows: np.ndarray, n: int, dtype: type = np.int64) -> np.ndarray:
    """(replicates, n): how often each of n items is drawn in each row of bootstrap indices `rows`."""
    out: np.ndarray = np.empty((len(rows), n), dtype=dtype)
    for i, row in enumerate(rows):  # a row at a time: its bins stay in the CPU's cache (one bincount over every
        out[i] = np.bincount(row, minlength=n)  # row's bins at once scattered over megabytes: several times slower)
    return out


def by_group(records: Sequence[PromptScores]) -> dict[str, list[PromptScores]]:
    """The records of each group (domain, subset), groups in name order."""
    groups: dict[str, list[PromptScores]] = {}
    for rec in records:
        groups.setdefault(rec.group, []).append(rec)
    return dict(sorted(groups.items()))


def pair_accuracies(
    records: Sequence[PromptScores], seed: int, samples: int | None = None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """For one-pair benchmarks, per group: each prompt's credit (chosen > rejected, strict; or a judge's credit) and
    the bootstrap replicates of its mean."""
    generator = rng(seed)
    kwargs = {} if samples is None else {"samples": samples}
    correct = {name: outcomes(recs, 1)[:, 0, 0] for name, recs in by_group(records).items()}
    return correct, {name: replicate_means(c, generator, **kwargs) for name, c in correct.items()}
