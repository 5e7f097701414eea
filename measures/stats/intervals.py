"""Percentile bootstrap confidence intervals, seeded for reproducible tables.

Two ways in:

* ``bootstrap_ci`` wraps ``scipy.stats.bootstrap`` for any statistic (paired or independent
  arrays). It is general but holds every resample at once and, for a non-vectorised statistic,
  calls it once per resample: fine for small samples, slow or memory-hungry for large ones.
* ``bootstrap_mean_ci`` (the means of Tables 1 and 2) and ``measures.stats.correlation``
  resample themselves, vectorised and in chunks of at most ``MAX_CHUNK_ELEMENTS`` values, so
  their memory does not grow with ``n_resamples × n``.

Every interval is the linear-interpolation percentile interval (scipy's ``method="percentile"``)
of the finite replicates (``percentile_interval``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from scipy import stats

Interval = tuple[float | None, float | None, float | None]

# Below this share of finite bootstrap replicates the interval would describe a different
# population than the estimate (mostly degenerate resamples), so it is reported as unknown.
_MIN_FINITE_SHARE = 0.5

# A chunk of resamples holds at most this many values (2 M float64 = 16 MB, plus as many int64
# indices): the memory bound of the hand-vectorised bootstraps, whatever n and n_resamples are.
# Smaller than the 8 M that would still be cheap, because blocks of 64 MB are fresh pages from
# the OS on every chunk and page faults made the 400 000-value mean twice as slow.
MAX_CHUNK_ELEMENTS = 2_000_000

# A sample of n values with at most n / 32 distinct ones (Likert answers, 0/1 accuracies, severity
# levels of a study) is resampled as multinomial counts of its distinct values: exact in
# distribution, n_resamples × distinct values of work and memory instead of n_resamples × n. One
# binomial draw costs about as much as 32 drawn-and-gathered indices (measured with numpy 2.4).
_MULTINOMIAL_VALUES_PER_DISTINCT = 32


def percentile_interval(
    replicates: np.ndarray, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """``(low, high)``: the percentile interval of the finite ``replicates``.

    Non-finite replicates (a statistic undefined on a degenerate resample) are dropped; if fewer
    than half are finite the interval is ``(None, None)``.
    """
    replicates = np.asarray(replicates, dtype=np.float64).ravel()
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0 or finite.size < _MIN_FINITE_SHARE * replicates.size:
        return None, None
    tail = (1 - confidence) / 2
    # scipy.stats.bootstrap's percentile interval is the linear-interpolation quantile.
    low, high = np.quantile(finite, [tail, 1 - tail])
    return float(low), float(high)


def percentile_intervals(
    replicates: np.ndarray, confidence: float = 0.95
) -> tuple[list[float | None], list[float | None]]:
    """``percentile_interval`` of every row of a 2-D array of replicates: (lows, highs), None
    where a row has too few finite replicates. Rows with the same number of finite replicates
    share one ``np.quantile`` call (a quantile depends on the values, not their order)."""
    replicates = np.asarray(replicates, dtype=np.float64)
    if replicates.ndim != 2:
        raise ValueError("percentile_intervals needs a 2-D array, one row of replicates per interval")
    rows, size = replicates.shape
    finite = np.isfinite(replicates)
    n_finite = finite.sum(axis=1)
    # Finite values first in each row (sorted: non-finite ones are moved past them as +inf).
    ordered = np.sort(np.where(finite, replicates, np.inf), axis=1)
    lows: list[float | None] = [None] * rows
    highs: list[float | None] = [None] * rows
    tail = (1 - confidence) / 2
    for k in np.unique(n_finite):
        if k == 0 or k < _MIN_FINITE_SHARE * size:
            continue
        members = np.flatnonzero(n_finite == k)
        bounds = np.quantile(ordered[members, :k], [tail, 1 - tail], axis=1)
        for row, low, high in zip(members, bounds[0], bounds[1], strict=True):
            lows[row], highs[row] = float(low), float(high)
    return lows, highs


def resample_index_chunks(
    n: int, *, n_resamples: int, seed: int, max_elements: int | None = None
) -> Iterator[np.ndarray]:
    """The bootstrap index matrix ``default_rng(seed).integers(0, n, size=(n_resamples, n))``,
    yielded as consecutive blocks of rows with at most ``max_elements`` (default
    ``MAX_CHUNK_ELEMENTS``) indices each, at least one row.

    Successive draws from one numpy Generator continue the same stream, so the blocks stacked are
    exactly the matrix drawn at once (the chunk size changes memory, not the numbers).
    """
    if n < 1 or n_resamples < 1:
        raise ValueError("resampling needs n >= 1 and n_resamples >= 1")
    rng = np.random.default_rng(seed)
    rows = max(1, (max_elements or MAX_CHUNK_ELEMENTS) // n)
    for start in range(0, n_resamples, rows):
        yield rng.integers(0, n, size=(min(rows, n_resamples - start), n))


def bootstrap_ci(
    statistic: Callable[..., float],
    *arrays: Sequence[float] | np.ndarray,
    paired: bool = True,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    vectorized: bool = False,
) -> Interval:
    """``(estimate, low, high)``: ``statistic(*arrays)`` with its percentile bootstrap interval.

    ``paired=True`` resamples the same indices in every array (e.g. the two vectors of a
    correlation); ``paired=False`` resamples each array on its own (e.g. two independent groups).
    ``statistic`` takes 1-D arrays (or, with ``vectorized=True``, arrays plus ``axis``).

    Replicates where the statistic is undefined (NaN, e.g. a correlation on a resample whose values
    are all equal) are dropped before taking percentiles; if fewer than half are finite the interval
    is ``(estimate, None, None)``. The estimate itself is ``None`` when it is not finite.

    This goes through ``scipy.stats.bootstrap`` (all resamples in memory at once); the means and
    correlations of the analysis use the chunked paths of this package instead.
    """
    data = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
    if not data:
        raise ValueError("bootstrap_ci needs at least one array")
    if paired and len({a.shape[0] for a in data}) != 1:
        raise ValueError("paired bootstrap needs arrays of equal length")
    with warnings.catch_warnings():
        # Constant resamples make correlations warn; they are handled by dropping NaN replicates.
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        estimate = float(statistic(*data))
        if not math.isfinite(estimate):
            return None, None, None
        if min(a.shape[0] for a in data) < 2:
            return estimate, None, None
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(
            data,
            statistic,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            paired=paired,
            vectorized=vectorized,
            rng=np.random.default_rng(seed),
        )
    low, high = percentile_interval(result.bootstrap_distribution, confidence)
    return estimate, low, high


def bootstrap_mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``(mean, low, high)`` with a percentile bootstrap interval; NaN values are dropped.

    With fewer than two values there is nothing to resample: ``(mean, None, None)`` (mean is
    ``None`` for no values, or when it is not finite).

    Memory stays bounded whatever the sample size (see ``bootstrap_mean_replicates``); the same
    seed gives the same interval.
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    data = data[~np.isnan(data)]
    if data.size == 0:
        return None, None, None
    mean = float(data.mean())
    if not math.isfinite(mean):
        return None, None, None
    if data.size < 2:
        return mean, None, None
    low, high = percentile_interval(
        bootstrap_mean_replicates(data, n_resamples=n_resamples, seed=seed), confidence
    )
    return mean, low, high


def bootstrap_mean_replicates(
    values: np.ndarray, *, n_resamples: int, seed: int, max_elements: int | None = None
) -> np.ndarray:
    """The ``n_resamples`` bootstrap means of the 1-D, NaN-free ``values`` (at least one).

    * Many ties, i.e. at most n / 32 distinct values (Likert answers, 0/1 accuracies): each
      resample is a multinomial draw of how often each distinct value is picked (``n`` draws with
      the observed frequencies), and its mean is ``counts · values / n``. This is exactly the
      distribution of resampling ``n`` values with replacement, at a cost of n_resamples ×
      distinct values (400 000 Likert answers: milliseconds, a few MB).
    * Otherwise: indices ``resample_index_chunks(n, ...)`` (the index matrix scipy.stats.bootstrap
      draws from the same seed), the mean of each resampled row, one chunk of at most
      ``max_elements`` (default ``MAX_CHUNK_ELEMENTS``) indices at a time.
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    n = data.size
    distinct, counts = np.unique(data, return_counts=True)
    replicates = np.empty(n_resamples, dtype=np.float64)
    if distinct.size * _MULTINOMIAL_VALUES_PER_DISTINCT <= n:
        rng = np.random.default_rng(seed)
        frequencies = counts / n
        rows = max(1, (max_elements or MAX_CHUNK_ELEMENTS) // distinct.size)
        for start in range(0, n_resamples, rows):
            stop = min(start + rows, n_resamples)
            drawn = rng.multinomial(n, frequencies, size=stop - start)
            replicates[start:stop] = drawn @ distinct / n
        return replicates
    start = 0
    for indices in resample_index_chunks(n, n_resamples=n_resamples, seed=seed, max_elements=max_elements):
        replicates[start : start + indices.shape[0]] = data[indices].mean(axis=1)
        start += indices.shape[0]
    return replicates
