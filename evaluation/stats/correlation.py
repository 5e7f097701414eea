"""Metric–human correlation (Pearson, Spearman, Kendall's tau-b) with bootstrap intervals."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from evaluation.stats.intervals import bootstrap_ci

_CORRELATIONS: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {
    "pearson": stats.pearsonr,
    "spearman": stats.spearmanr,
    "kendall": stats.kendalltau,
}

_MIN_PAIRS = 3


def correlate(
    metric_values: Sequence[float] | np.ndarray,
    human_values: Sequence[float] | np.ndarray,
    *,
    method_names: Sequence[str] = ("pearson", "spearman", "kendall"),
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """One record ``{method, r, p_value, ci_low, ci_high, n}`` per method, for aligned vectors.

    Pairs with a missing value on either side (None/NaN) are dropped; ``n`` counts the rest.
    With fewer than 3 pairs, or when a side is constant, ``r`` and everything after it are None.
    The interval is a paired percentile bootstrap (same resampled pairs for x and y).
    """
    unknown = [name for name in method_names if name not in _CORRELATIONS]
    if unknown:
        raise ValueError(f"unknown correlation method(s) {unknown}; choose from {sorted(_CORRELATIONS)}")
    x = np.asarray(metric_values, dtype=np.float64)
    y = np.asarray(human_values, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("metric_values and human_values must be aligned 1-D vectors")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    records = []
    for name in method_names:
        record: dict[str, Any] = {"method": name, "r": None, "p_value": None, "ci_low": None, "ci_high": None}
        if n >= _MIN_PAIRS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", stats.ConstantInputWarning)
                result = _CORRELATIONS[name](x, y)
            r, p_value = float(result.statistic), float(result.pvalue)
            if math.isfinite(r):
                _, low, high = bootstrap_ci(
                    _statistic(name),
                    x,
                    y,
                    paired=True,
                    n_resamples=n_resamples,
                    confidence=confidence,
                    seed=seed,
                )
                record.update(r=r, p_value=p_value, ci_low=low, ci_high=high)
        record["n"] = n
        records.append(record)
    return records


def _statistic(name: str) -> Callable[[np.ndarray, np.ndarray], float]:
    correlation = _CORRELATIONS[name]

    def statistic(x: np.ndarray, y: np.ndarray) -> float:
        return float(correlation(x, y).statistic)

    return statistic
