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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import special, stats
from threadpoolctl import threadpool_limits

from measures.stats import intervals
from measures.stats.intervals import percentile_interval, percentile_intervals, resample_index_chunks
from measures.stats.support import CORRELATION

_CORRELATIONS: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {
    "pearson": stats.pearsonr,
    "spearman": stats.spearmanr,
    "kendall": stats.kendalltau,
}

_MIN_PAIRS = 3

# Pairs above which the interval is the Fisher-z one (module docstring). At 5000 pairs the two
# agree to about 0.005 in each bound (tests/measures/stats/test_correlation.py).
BOOTSTRAP_MAX_PAIRS = 5000

# Variance of atanh(coefficient) times (n − offset), per method: (constant, offset, r² factor).
_FISHER_VARIANCE = {"pearson": (1.0, 3, 0.0), "spearman": (1.0, 3, 0.5), "kendall": (0.437, 4, 0.0)}

# A block of correlate_columns' resamples holds this many times MAX_CHUNK_ELEMENTS values over all
# its columns (64 MB of float64): few blocks, so few calls per pair, within a bounded memory.
_BLOCK_CHUNKS = 4

# Largest k × k sign matrix of Kendall's vectorised path: 2828 distinct pairs, 8 M float32
# entries (32 MB, built from two such temporaries). Up to there one matrix product per block beats
# a scipy call per resample several times over (bench/bootstrap.py: n = 2000).
_KENDALL_MATRIX_MAX_PAIRS = 2828

# Values of the side-by-side sign matrices of correlate_columns' Kendall products (32 MB of float32).
_KENDALL_STACK_VALUES = 8_000_000

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
    """One record ``{method, r, p_value, ci_low, ci_high, n, interval, support}`` per method, for aligned
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
    replicates = {}
    if estimates and bootstrap:
        with threadpool_limits(limits=1, user_api="blas"):  # as in _correlate_group
            replicates = bootstrap_correlations(
                x, y, method_names=tuple(estimates), n_resamples=n_resamples, seed=seed
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
            low, high = CORRELATION.bound(r, low, high)
            record.update(r=r, p_value=estimates[name][1], ci_low=low, ci_high=high)
        record["n"] = n
        record["interval"] = "bootstrap" if bootstrap else "fisher_z"
        record["support"] = CORRELATION.record()
        records.append(record)
    return records


def correlate_columns(
    metric_columns: Mapping[str, Sequence[float] | np.ndarray],
    human_columns: Mapping[str, Sequence[float] | np.ndarray],
    *,
    method_names: Sequence[str] = ("pearson", "spearman", "kendall"),
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    bootstrap_max_pairs: int = BOOTSTRAP_MAX_PAIRS,
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """``{(metric, measure): correlate(metric_columns[metric], human_columns[measure], ...)}`` for
    every pair of columns (all aligned 1-D vectors), computed together.

    The pairs that keep the same rows (the same missing values) share what ``correlate`` would
    compute for each of them: one bootstrap index matrix (the same seed and size give the same
    matrix), each column resampled and ranked once per block of resamples, Pearson's estimates
    in one ``scipy.stats.pearsonr`` call along an axis and Spearman's from one
    ``scipy.stats.spearmanr`` matrix, Kendall's in one ``scipy.stats.kendalltau`` call along an axis.
    """
    _check_methods(method_names)
    methods = tuple(dict.fromkeys(method_names))
    xs = {name: np.asarray(values, dtype=np.float64) for name, values in metric_columns.items()}
    ys = {name: np.asarray(values, dtype=np.float64) for name, values in human_columns.items()}
    shapes = {column.shape for column in (*xs.values(), *ys.values())}
    if len(shapes) > 1 or any(len(shape) != 1 for shape in shapes):
        raise ValueError("every metric and human column must be an aligned 1-D vector")
    groups: dict[bytes, list[tuple[str, str]]] = {}
    for metric, x in xs.items():
        for measure, y in ys.items():
            keep = ~(np.isnan(x) | np.isnan(y))
            groups.setdefault(keep.tobytes(), []).append((metric, measure))
    records: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for key, pairs in groups.items():
        keep = np.frombuffer(key, dtype=bool)
        records.update(
            _correlate_group(
                {metric: xs[metric][keep] for metric, _ in pairs},
                {measure: ys[measure][keep] for _, measure in pairs},
                pairs,
                methods=methods,
                n_resamples=n_resamples,
                seed=seed,
                confidence=confidence,
                bootstrap_max_pairs=bootstrap_max_pairs,
            )
        )
    return {pair: records[pair] for pair in ((m, h) for m in xs for h in ys)}


def _correlate_group(
    xs: Mapping[str, np.ndarray],
    ys: Mapping[str, np.ndarray],
    pairs: Sequence[tuple[str, str]],
    *,
    methods: tuple[str, ...],
    n_resamples: int,
    seed: int,
    confidence: float,
    bootstrap_max_pairs: int,
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """``correlate`` of pairs whose columns have no missing values and the same length."""
    n = int(next(iter(xs.values())).size)
    estimates: dict[tuple[str, str], dict[str, tuple[float, float]]] = {pair: {} for pair in pairs}
    if n >= _MIN_PAIRS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            if "pearson" in methods:
                found["pearson"] = _pearson_pairs(xs, ys, pairs)
            if "kendall" in methods:
                # Pair by pair (what kendalltau along an axis does row by row), without stacking a
                # copy of both columns per pair: 330 pairs of 80 000 values would be 400 MB.
                results = [stats.kendalltau(xs[m], ys[h]) for m, h in pairs]
                found["kendall"] = (
                    np.array([float(result.statistic) for result in results], dtype=np.float64),
                    np.array([float(result.pvalue) for result in results], dtype=np.float64),
                )
            if "spearman" in methods:
                found["spearman"] = _spearman_pairs(xs, ys, pairs)
        for name in methods:
            statistic, pvalue = found[name]
            for pair, r, p in zip(pairs, statistic, pvalue, strict=True):
                if math.isfinite(float(r)):
                    estimates[pair][name] = (float(r), float(p))
    bootstrap = n <= bootstrap_max_pairs
    wanted = {pair: tuple(found_methods) for pair, found_methods in estimates.items() if found_methods}
    replicates = {}
    if bootstrap and wanted:
        # Kendall's products are blocks × at most a few thousand: BLAS threads cost more than they
        # bring there (ten times the CPU time on two cores), so one thread.
        with threadpool_limits(limits=1, user_api="blas"):
            replicates = _bootstrap_pairs(xs, ys, wanted, n_resamples=n_resamples, seed=seed)
    bounds = {}
    if replicates:
        keys = list(replicates)
        low, high = percentile_intervals(np.stack([replicates[key] for key in keys]), confidence)
        bounds = {key: (lo, hi) for key, lo, hi in zip(keys, low, high, strict=True)}
    records = {}
    for pair in pairs:
        rows = []
        for name in methods:
            record: dict[str, Any] = dict(method=name, r=None, p_value=None, ci_low=None, ci_high=None)
            if name in estimates[pair]:
                r, p = estimates[pair][name]
                ends = bounds[(*pair, name)] if bootstrap else fisher_z_interval(name, r, n, confidence)
                ci_low, ci_high = CORRELATION.bound(r, *ends)
                record.update(r=r, p_value=p, ci_low=ci_low, ci_high=ci_high)
            record["n"] = n
            record["interval"] = "bootstrap" if bootstrap else "fisher_z"
            record["support"] = CORRELATION.record()
            rows.append(record)
        records[pair] = rows
    return records


def _pearson_pairs(
    xs: Mapping[str, np.ndarray], ys: Mapping[str, np.ndarray], pairs: Sequence[tuple[str, str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Pearson's (r, p) of each pair, the values ``scipy.stats.pearsonr(x_rows, y_rows, axis=1)``
    gives (two-sided): each distinct column is centred and scaled once, with scipy's operations
    in scipy's order, and a pair is one dot product of two scaled columns, instead of every
    operation repeated on a copy of both columns per pair (a metric meets every human measure).
    Inputs: aligned columns of at least 3 values without NaN."""

    def scaled(columns: Mapping[str, np.ndarray], names: list[str]) -> np.ndarray:
        rows = np.stack([columns[name] for name in names]).astype(np.float64)
        constant = np.all(rows == rows[..., 0:1], axis=-1)
        rows = np.where(constant[..., np.newaxis], np.nan, rows)
        centred = rows - np.mean(rows, axis=-1, keepdims=True)
        largest = np.max(np.abs(centred), axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            norm = largest * np.linalg.norm(centred / largest, ord=2, axis=-1, keepdims=True)
            unit_rows: np.ndarray = centred / norm
            return unit_rows

    metrics, measures = list(dict.fromkeys(m for m, _ in pairs)), list(dict.fromkeys(h for _, h in pairs))
    x, y = scaled(xs, metrics), scaled(ys, measures)
    x_of = np.array([metrics.index(m) for m, _ in pairs], dtype=np.int64)
    y_of = np.array([measures.index(h) for _, h in pairs], dtype=np.int64)
    # numpy's stub types vecdot without the gufunc's `axis` keyword, which numpy accepts.
    r = np.clip(np.vecdot(x[x_of], y[y_of], axis=-1), -1.0, 1.0)  # type: ignore[call-overload]
    n = float(x.shape[1])
    # Under the null hypothesis r follows a beta distribution on (-1, 1) with a = b = n/2 - 1.
    shape = np.asarray(n / 2 - 1, dtype=np.float64)
    pvalue = 2 * special.betaincc(shape, shape, (np.abs(r) + 1) / 2)
    return r, pvalue


def _spearman_pairs(
    xs: Mapping[str, np.ndarray], ys: Mapping[str, np.ndarray], pairs: Sequence[tuple[str, str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Spearman's (rho, p) of each pair, from one ``scipy.stats.spearmanr`` correlation matrix of
    the columns (the same ranks, correlations and t-test as one call per pair). A constant column
    has no rho with anything (NaN, as a call per pair gives); it is left out of the matrix, since
    spearmanr answers a single NaN for the whole matrix when its first or second column is."""
    columns = list(dict.fromkeys([*(("x", m) for m, _ in pairs), *(("y", h) for _, h in pairs)]))
    values = {(side, name): xs[name] if side == "x" else ys[name] for side, name in columns}
    live = [column for column in columns if not (values[column] == values[column][0]).all()]
    position = {column: i for i, column in enumerate(live)}
    rho = np.full((len(live) + 1, len(live) + 1), np.nan)  # the last row and column: constant ones
    pvalue = np.full_like(rho, np.nan)
    if len(live) >= 2:
        result = stats.spearmanr(np.column_stack([values[column] for column in live]))
        rho[:-1, :-1], pvalue[:-1, :-1] = result.statistic, result.pvalue
    i = [position.get(("x", m), len(live)) for m, _ in pairs]
    j = [position.get(("y", h), len(live)) for _, h in pairs]
    return rho[i, j], pvalue[i, j]


_Column = tuple[str, str]
_Centred = tuple[np.ndarray, np.ndarray, np.ndarray]


def _resampled_columns(
    columns: Mapping[_Column, np.ndarray],
    codes: Mapping[_Column, tuple[np.ndarray, np.ndarray]],
    indices: np.ndarray,
    needs: set[str],
) -> tuple[dict[_Column, _Centred], dict[_Column, _Centred], dict[_Column, np.ndarray]]:
    """Per column, for a block of resamples (`indices`, one row a resample): its centred values
    (for Pearson), its centred ranks (Spearman) and its value counts (Spearman, Kendall), each
    only where a wanted method needs it."""
    values: dict[_Column, _Centred] = {}
    ranks: dict[_Column, _Centred] = {}
    counts: dict[_Column, np.ndarray] = {}
    for key, column in columns.items():
        if "pearson" in needs:
            values[key] = _centred_rows(column[indices])
        if needs & {"spearman", "kendall"}:
            distinct, code = codes[key]
            drawn = code[indices]
            counts[key] = _row_bincount(drawn, distinct.size)
            if "spearman" in needs:
                ranks[key] = _centred_rows(_average_ranks(drawn, counts[key]))
    return values, ranks, counts


def _bootstrap_pairs(
    xs: Mapping[str, np.ndarray],
    ys: Mapping[str, np.ndarray],
    wanted: Mapping[tuple[str, str], tuple[str, ...]],
    *,
    n_resamples: int,
    seed: int,
) -> dict[tuple[str, str, str], np.ndarray]:
    """``{(metric, measure, method): replicates}``, as ``bootstrap_correlations`` of each pair
    with its wanted methods, on one index matrix. Per block of resamples each column is resampled,
    centred and ranked once; a pair's Pearson and Spearman replicates are then the same row-wise
    products as ``_pearson_rows``, and Kendall's the exact integer counts of ``_KendallResampler``."""
    n = int(next(iter(xs.values())).size)
    columns = {("x", m): xs[m] for m, _ in wanted} | {("y", h): ys[h] for _, h in wanted}
    needs = {method for methods in wanted.values() for method in methods}
    codes = {key: np.unique(values, return_inverse=True) for key, values in columns.items()}
    kendall_of: dict[str, list[str]] = {}  # metric -> its measures with a Kendall replicate
    for (metric, measure), methods in wanted.items():
        if "kendall" in methods:
            kendall_of.setdefault(metric, []).append(measure)
    # Up to _KENDALL_MATRIX_MAX_PAIRS items, the sign matrices are over items and every pair of a
    # block shares the items' weights; above, each pair has its own resampler (distinct pairs, or
    # scipy per resample).
    item_signs = n <= _KENDALL_MATRIX_MAX_PAIRS
    kendall = {
        (metric, measure): _KendallResampler(
            xs[metric], ys[measure], codes[("x", metric)][1], codes[("y", measure)][1]
        )
        for metric, measures in kendall_of.items()
        for measure in measures
        if not item_signs
    }
    total = n * (n - 1) // 2
    replicates = {
        (*pair, method): np.empty(n_resamples, dtype=np.float64)
        for pair, methods in wanted.items()
        for method in methods
    }
    # Per column and block: centred values, centred ranks and value counts (three arrays of the
    # block's size), so a block holds _BLOCK_CHUNKS × MAX_CHUNK_ELEMENTS values in all, whatever
    # the number of columns.
    block = max(n, _BLOCK_CHUNKS * intervals.MAX_CHUNK_ELEMENTS // (3 * len(columns)))
    start = 0
    for indices in resample_index_chunks(n, n_resamples=n_resamples, seed=seed, max_elements=block):
        stop = start + indices.shape[0]
        values, ranks, counts = _resampled_columns(columns, codes, indices, needs)
        rows = slice(start, stop)
        for (metric, measure), methods in wanted.items():
            x, y = ("x", metric), ("y", measure)
            if "pearson" in methods:
                replicates[(metric, measure, "pearson")][rows] = _pearson_centred(values[x], values[y])
            if "spearman" in methods:
                replicates[(metric, measure, "spearman")][rows] = _pearson_centred(ranks[x], ranks[y])
            if "kendall" in methods and not item_signs:
                replicates[(metric, measure, "kendall")][rows] = kendall[(metric, measure)].tau_b(
                    indices, counts[x], counts[y]
                )
        if kendall_of and item_signs:
            ties = {key: _tied_pairs(value_counts) for key, value_counts in counts.items()}
            weights = _row_bincount(indices, n).astype(np.float32)
            weights_f64 = weights.astype(np.float64)
            # Several measures' sign matrices side by side: one matrix product per metric and batch.
            width = max(1, _KENDALL_STACK_VALUES // (n * n))
            for metric, measures in kendall_of.items():
                x_sign = _sign_matrix(codes[("x", metric)][1])
                for first in range(0, len(measures), width):
                    batch = measures[first : first + width]
                    stack = np.concatenate([x_sign * _sign_matrix(codes[("y", h)][1]) for h in batch], axis=1)
                    products = (weights @ stack).astype(np.float64).reshape(len(indices), len(batch), n)
                    twice = np.einsum("rbj,rj->rb", products, weights_f64)
                    for i, measure in enumerate(batch):
                        replicates[(metric, measure, "kendall")][rows] = _tau_b(
                            twice[:, i] / 2, ties[("x", metric)], ties[("y", measure)], total
                        )
        start = stop
    return replicates


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
    return _pearson_centred(_centred_rows(a), _centred_rows(b))


def _centred_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows minus their means, their sums of squares, which rows are constant)."""
    constant = (a == a[:, :1]).all(axis=1)
    centred = a - a.mean(axis=1, keepdims=True)
    return centred, np.einsum("ij,ij->i", centred, centred), constant


def _pearson_centred(
    a: tuple[np.ndarray, np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> np.ndarray:
    """Pearson's r of each row pair from ``_centred_rows`` of both sides."""
    (a_rows, a_squares, a_constant), (b_rows, b_squares, b_constant) = a, b
    with np.errstate(invalid="ignore", divide="ignore"):
        products: np.ndarray = np.einsum("ij,ij->i", a_rows, b_rows) / np.sqrt(a_squares * b_squares)
    r: np.ndarray = np.clip(products, -1.0, 1.0)
    r[a_constant | b_constant] = np.nan
    return r


def _sign_matrix(codes: np.ndarray) -> np.ndarray:
    """``sign(codes[i] - codes[j])`` as float32 (codes keep the order of the values)."""
    codes = codes.astype(np.float32)
    sign: np.ndarray = np.subtract.outer(codes, codes)
    signs: np.ndarray = np.sign(sign, out=sign)
    return signs


def _tied_pairs(counts: np.ndarray) -> np.ndarray:
    """Per row of value counts, the number of pairs of drawn items with equal values."""
    pairs: np.ndarray = (counts * (counts - 1)).sum(axis=1) // 2
    return pairs


def _tau_b(con_minus_dis: np.ndarray, x_ties: np.ndarray, y_ties: np.ndarray, total: int) -> np.ndarray:
    """Kendall's tau-b from (concordant − discordant) and tied pairs per side, as scipy; NaN where
    a side is constant."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio: np.ndarray = con_minus_dis / np.sqrt(total - x_ties) / np.sqrt(total - y_ties)
    tau: np.ndarray = np.clip(ratio, -1.0, 1.0)
    tau[(x_ties == total) | (y_ties == total)] = np.nan
    return tau


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
        return _tau_b(twice / 2, _tied_pairs(x_counts), _tied_pairs(y_counts), self.total)

    def _tau_b_loop(self, indices: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            return np.array(
                [stats.kendalltau(self.x[row], self.y[row]).statistic for row in indices], dtype=np.float64
            )
