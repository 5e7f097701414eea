"""Metric–human correlation (Pearson, Spearman, Kendall's tau-b) with paired bootstrap intervals.

Point estimates and p-values come from ``scipy.stats.pearsonr/spearmanr/kendalltau``. The
bootstrap replicates are computed for a whole block of resamples at once (one seeded index
matrix, ``intervals.resample_index_chunks``, shared by the three coefficients):

* Pearson: row-wise centred dot products of the resampled pairs.
* Spearman: Pearson on the average ranks of each resampled row. The ranks are those of
  ``scipy.stats.rankdata(row)``, but built from how often each distinct value was drawn (a
  cumulative count), which is O(n) per resample instead of a sort.
* Kendall's tau-b: a resample is a multiset of the observed (x, y) pairs, so with ``w`` the number
  of times each distinct pair was drawn and ``S`` the matrix of sign(xi − xj)·sign(yi − yj)
  between distinct pairs, (concordant − discordant) = wᵀSw / 2; ties per side come from the
  counts of each distinct value, and tau-b = (C − D) / √(n0 − n1) / √(n0 − n2) as in scipy. All
  counts are integers, so this equals scipy's value on the resampled row up to the last division.
  One matrix product per block of resamples (O(k²) per resample for k distinct pairs); above
  ``_KENDALL_MATRIX_MAX_PAIRS`` distinct pairs (S would take more than 32 MB) it falls
  back to ``scipy.stats.kendalltau`` on each resampled row (O(n log n) each, slower).

A resample on which a coefficient is undefined (one side constant) gives NaN, and is dropped
from the interval (``intervals.percentile_interval``).

Above ``BOOTSTRAP_MAX_PAIRS`` pairs the bootstrap costs n_resamples × n per coefficient (and
Kendall's a sort per resample) for an interval that has become normal-shaped and narrow; there
the interval is the Fisher-z one instead: tanh(atanh(r) ± z·SE) with SE = 1/√(n − 3) for
Pearson, √((1 + r²/2)/(n − 3)) for Spearman (Bonett & Wright 2000) and √(0.437/(n − 4)) for
Kendall's tau (Fieller, Hartley & Pearson 1957). Each record says which interval it has.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from evaluation.stats.intervals import percentile_interval, resample_index_chunks

_CORRELATIONS: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {
    "pearson": stats.pearsonr,
    "spearman": stats.spearmanr,
    "kendall": stats.kendalltau,
}

_MIN_PAIRS = 3

# Pairs above which the interval is the Fisher-z one (module docstring). At 5000 pairs the two
# agree to about 0.005 in each bound (tests/evaluation/stats/test_correlation.py).
BOOTSTRAP_MAX_PAIRS = 5000

# Variance of atanh(coefficient) times (n − offset), per method: (constant, offset, r² factor).
_FISHER_VARIANCE = {"pearson": (1.0, 3, 0.0), "spearman": (1.0, 3, 0.5), "kendall": (0.437, 4, 0.0)}

# Largest k × k sign matrix of Kendall's vectorised path: 2828 distinct pairs, 8 M float32
# entries (32 MB, built from two such temporaries). Up to there one matrix product per block beats
# a scipy call per resample several times over (bench/bootstrap.py: n = 2000).
_KENDALL_MATRIX_MAX_PAIRS = 2828

# Integers up to 2**24 are exact in float32: the entries of w·S are bounded by n in absolute value,
# so the float32 matrix product (twice as fast as float64) is exact below this sample size.
_FLOAT32_EXACT_MAX_N = 2**24


def correlate(
    metric_values: Sequence[float] | np.ndarray,
    human_values: Sequence[float] | np.ndarray,
    *,
    method_names: Sequence[str] = ("pearson", "spearman", "kendall"),
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    bootstrap_max_pairs: int = BOOTSTRAP_MAX_PAIRS,
) -> list[dict[str, Any]]:
    """One record ``{method, r, p_value, ci_low, ci_high, n, interval}`` per method, for aligned
    vectors; ``interval`` is "bootstrap" up to ``bootstrap_max_pairs`` pairs, "fisher_z" above.

    Pairs with a missing value on either side (None/NaN) are dropped; ``n`` counts the rest.
    With fewer than 3 pairs, or when a side is constant, ``r`` and everything after it are None.
    The interval is a paired percentile bootstrap (same resampled pairs for x and y, and the same
    resamples for every method); it is None when fewer than half of the resamples give a defined
    coefficient.
    """
    _check_methods(method_names)
    x = np.asarray(metric_values, dtype=np.float64)
    y = np.asarray(human_values, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("metric_values and human_values must be aligned 1-D vectors")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    estimates: dict[str, tuple[float, float]] = {}
    if n >= _MIN_PAIRS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            for name in dict.fromkeys(method_names):
                result = _CORRELATIONS[name](x, y)
                if math.isfinite(float(result.statistic)):
                    estimates[name] = (float(result.statistic), float(result.pvalue))
    bootstrap = n <= bootstrap_max_pairs
    replicates = (
        bootstrap_correlations(x, y, method_names=tuple(estimates), n_resamples=n_resamples, seed=seed)
        if estimates and bootstrap
        else {}
    )
    records = []
    for name in method_names:
        record: dict[str, Any] = {"method": name, "r": None, "p_value": None, "ci_low": None, "ci_high": None}
        if name in estimates:
            r = estimates[name][0]
            if bootstrap:
                low, high = percentile_interval(replicates[name], confidence)
            else:
                low, high = fisher_z_interval(name, r, n, confidence)
            record.update(r=r, p_value=estimates[name][1], ci_low=low, ci_high=high)
        record["n"] = n
        record["interval"] = "bootstrap" if bootstrap else "fisher_z"
        records.append(record)
    return records


def fisher_z_interval(method: str, r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Fisher-z interval of a ``method`` coefficient ``r`` on ``n`` pairs (module docstring)."""
    constant, offset, r_squared = _FISHER_VARIANCE[method]
    if n <= offset:
        raise ValueError(f"the Fisher-z interval of {method} needs more than {offset} pairs")
    if abs(r) >= 1:
        return float(r), float(r)
    se = math.sqrt(constant * (1 + r_squared * r * r) / (n - offset))
    half = float(stats.norm.ppf(0.5 + confidence / 2)) * se
    z = math.atanh(r)
    return math.tanh(z - half), math.tanh(z + half)


def bootstrap_correlations(
    metric_values: np.ndarray,
    human_values: np.ndarray,
    *,
    method_names: Sequence[str] = ("pearson", "spearman", "kendall"),
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """``{method: replicates}``: each coefficient on every paired bootstrap resample.

    Resample ``b`` takes the pairs ``indices[b]`` of the matrix
    ``numpy.random.default_rng(seed).integers(0, n, size=(n_resamples, n))``; a replicate is NaN
    where the coefficient is undefined (a constant side). Inputs: aligned 1-D vectors without
    missing values, at least two pairs. Memory stays within a few times
    ``intervals.MAX_CHUNK_ELEMENTS`` values per block of resamples, plus Kendall's sign matrix
    (at most 32 MB).
    """
    _check_methods(method_names)
    x = np.asarray(metric_values, dtype=np.float64)
    y = np.asarray(human_values, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError("bootstrap_correlations needs two aligned 1-D vectors of at least 2 pairs")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("bootstrap_correlations needs vectors without missing values")
    n = x.size
    wanted = set(method_names)
    replicates = {name: np.empty(n_resamples, dtype=np.float64) for name in wanted}
    # Codes 0..k-1 of the distinct values (in sorted order), and of the distinct (x, y) pairs.
    x_distinct, x_code = np.unique(x, return_inverse=True)
    y_distinct, y_code = np.unique(y, return_inverse=True)
    kendall = _KendallResampler(x, y, x_code, y_code) if "kendall" in wanted else None
    start = 0
    for indices in resample_index_chunks(n, n_resamples=n_resamples, seed=seed):
        stop = start + indices.shape[0]
        if "pearson" in wanted:
            replicates["pearson"][start:stop] = _pearson_rows(x[indices], y[indices])
        if wanted & {"spearman", "kendall"}:
            x_drawn, y_drawn = x_code[indices], y_code[indices]
            x_counts = _row_bincount(x_drawn, x_distinct.size)
            y_counts = _row_bincount(y_drawn, y_distinct.size)
            if "spearman" in wanted:
                replicates["spearman"][start:stop] = _pearson_rows(
                    _average_ranks(x_drawn, x_counts), _average_ranks(y_drawn, y_counts)
                )
            if kendall is not None:
                replicates["kendall"][start:stop] = kendall.tau_b(indices, x_counts, y_counts)
        start = stop
    return replicates


def _check_methods(method_names: Sequence[str]) -> None:
    unknown = [name for name in method_names if name not in _CORRELATIONS]
    if unknown:
        raise ValueError(f"unknown correlation method(s) {unknown}; choose from {sorted(_CORRELATIONS)}")


def _row_bincount(codes: np.ndarray, k: int) -> np.ndarray:
    """``counts[b, v]``: how often code ``v`` occurs in row ``b`` of ``codes``."""
    rows = codes.shape[0]
    offsets = np.arange(rows, dtype=np.int64)[:, np.newaxis] * k
    return np.bincount((codes + offsets).ravel(), minlength=rows * k).reshape(rows, k)


def _average_ranks(drawn_codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``rankdata(row)`` (average ranks for ties) of every resampled row, from value counts.

    The codes are in value order, so a value's average rank is the number of drawn values below
    it plus (its own count + 1) / 2, i.e. cumulative count − (count − 1) / 2.
    """
    average = np.cumsum(counts, axis=1) - (counts - 1) / 2
    return np.take_along_axis(average, drawn_codes, axis=1)


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair; NaN where a row is constant (as scipy.stats.pearsonr)."""
    constant = (a == a[:, :1]).all(axis=1) | (b == b[:, :1]).all(axis=1)
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.einsum("ij,ij->i", a, b) / np.sqrt(np.einsum("ij,ij->i", a, a) * np.einsum("ij,ij->i", b, b))
    r = np.clip(r, -1.0, 1.0)
    r[constant] = np.nan
    return r


class _KendallResampler:
    """Kendall's tau-b on blocks of resamples of fixed data (codes of its distinct values)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, x_code: np.ndarray, y_code: np.ndarray) -> None:
        self.x, self.y = x, y
        n = x.size
        pairs, pair_code = np.unique(np.column_stack([x_code, y_code]), axis=0, return_inverse=True)
        self.pair_code = pair_code.ravel()
        self.n_pairs = pairs.shape[0]
        self.total = n * (n - 1) // 2
        self.dtype = np.float32 if n < _FLOAT32_EXACT_MAX_N else np.float64
        self.sign = None
        if self.n_pairs <= _KENDALL_MATRIX_MAX_PAIRS:
            # Codes keep the order of the values, so their differences have the values' signs.
            px, py = pairs[:, 0].astype(self.dtype), pairs[:, 1].astype(self.dtype)
            sign = np.subtract.outer(px, px)
            np.sign(sign, out=sign)
            other = np.subtract.outer(py, py)
            np.sign(other, out=other)
            sign *= other
            self.sign = sign

    def tau_b(self, indices: np.ndarray, x_counts: np.ndarray, y_counts: np.ndarray) -> np.ndarray:
        if self.sign is None:
            return self._tau_b_loop(indices)
        weights = _row_bincount(self.pair_code[indices], self.n_pairs)
        # Σ_i Σ_j w_i w_j S_ij counts every pair of resampled items twice (S_ii = 0: a pair drawn
        # twice is tied on both sides). Exact: integers within the float type's exact range.
        twice = np.einsum("ij,ij->i", (weights.astype(self.dtype) @ self.sign).astype(np.float64), weights)
        con_minus_dis = twice / 2
        x_ties = (x_counts * (x_counts - 1)).sum(axis=1) // 2
        y_ties = (y_counts * (y_counts - 1)).sum(axis=1) // 2
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = con_minus_dis / np.sqrt(self.total - x_ties) / np.sqrt(self.total - y_ties)
        tau = np.clip(tau, -1.0, 1.0)
        tau[(x_ties == self.total) | (y_ties == self.total)] = np.nan
        return tau

    def _tau_b_loop(self, indices: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            return np.array(
                [stats.kendalltau(self.x[row], self.y[row]).statistic for row in indices], dtype=np.float64
            )
