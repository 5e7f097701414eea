"""Percentile bootstrap confidence intervals (scipy.stats.bootstrap), seeded for reproducible tables."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

Interval = tuple[float | None, float | None, float | None]

# Below this share of finite bootstrap replicates the interval would describe a different
# population than the estimate (mostly degenerate resamples), so it is reported as unknown.
_MIN_FINITE_SHARE = 0.5


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
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if math.isfinite(low) and math.isfinite(high):
        return estimate, low, high
    replicates = np.asarray(result.bootstrap_distribution, dtype=np.float64)
    finite = replicates[np.isfinite(replicates)]
    if finite.size < _MIN_FINITE_SHARE * replicates.size:
        return estimate, None, None
    tail = (1 - confidence) / 2
    # scipy's percentile interval is the linear-interpolation quantile; use the same rule here.
    low, high = np.quantile(finite, [tail, 1 - tail])
    return estimate, float(low), float(high)


def bootstrap_mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``(mean, low, high)`` with a percentile bootstrap interval; NaN values are dropped.

    With fewer than two values there is nothing to resample: ``(mean, None, None)`` (mean is
    ``None`` for no values).
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    data = data[~np.isnan(data)]
    if data.size == 0:
        return None, None, None
    if data.size < 2:
        return float(data.mean()), None, None
    return bootstrap_ci(
        np.mean,
        data,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        vectorized=True,
    )
