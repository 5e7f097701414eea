"""Intervals for means of crossed data: every answer belongs to one participant (row) and one source
(column), and both are samples from larger populations.

Model: ``y = mu + a_participant + b_source + e`` with independent effects of variances
``row``, ``column`` and ``residual``. An answer-level bootstrap treats the answers as independent
and ignores both effects (on 8 participants × 40 sources it covers far below its nominal level);
the pigeonhole bootstrap (resample participants and sources independently, Owen 2007) has a
conservative variance in large samples, yet its percentile interval covers about 90 % with 8
participants (400 simulated studies × 1000 resamples). radlay uses the variance of the linear
estimator under the crossed model instead, which holds for any pattern of observed cells
(Owen 2007, section 3):

    Var(sum_k w_k y_k) = row · sum_i (sum_{k in i} w_k)² + column · sum_j (sum_{k in j} w_k)²
                         + residual · sum_k w_k²

with the three components estimated by the method of moments from the within-participant,
within-source and total sums of squares (Gao & Owen 2017, section 3; in a complete balanced table
these are the two-way ANOVA estimators). A negative estimate is set to 0. The interval is
``estimate ± t · SE`` with Satterthwaite's degrees of freedom for the linear combination of the
three components (participants − 1, sources − 1 and the residual's), which is what brings a study
with few participants to its nominal coverage.

Pure numpy/pandas/scipy: no Django. Everything is O(n) (bincount), so thousands of intervals cost
milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats


@dataclass(frozen=True)
class Components:
    """Moment estimates of the crossed model's variances, clipped at 0, and the sample shape."""

    row: float
    column: float
    residual: float
    n: int
    n_rows: int
    n_columns: int
    residual_df: int = 1  # N − 1 − (R − 1) − (C − 1), less what the design cannot identify


@dataclass(frozen=True)
class CrossedInterval:
    estimate: float | None
    low: float | None
    high: float | None
    se: float | None
    df: float | None
    n: int
    n_rows: int
    n_columns: int


def _codes_and_labels(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Hashing, not sorting: participant and source labels are strings, which numpy sorts slowly.
    codes, uniques = pd.factorize(np.asarray(labels).ravel(), sort=True)
    return codes.astype(np.int64), np.asarray(uniques)


def _codes(labels: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniques = _codes_and_labels(labels)
    return codes, uniques.size


def _clean(values, rows, columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = np.asarray(values, dtype=np.float64).ravel()
    r = np.asarray(rows).ravel()
    c = np.asarray(columns).ravel()
    if not (y.size == r.size == c.size):
        raise ValueError("values, rows and columns must have the same length")
    keep = ~np.isnan(y)
    return y[keep], r[keep], c[keep]


def _within_ss(y: np.ndarray, codes: np.ndarray, k: int) -> float:
    sums = np.bincount(codes, weights=y, minlength=k)
    counts = np.bincount(codes, minlength=k)
    return float(np.sum(y * y) - np.sum(sums[counts > 0] ** 2 / counts[counts > 0]))


def variance_components(values, rows, columns) -> Components:
    """Method-of-moments estimates of the row, column and residual variances of crossed data.

    ``values`` may contain NaN (dropped with their labels); ``rows``/``columns`` are any hashable
    labels. The moment equations (n_i. answers of row i, n_.j of column j, N in all):

        E[within-row SS]    = (N − R)(column + residual)
        E[within-column SS] = (N − C)(row + residual)
        E[total SS]         = row (N − Σ n_i.²/N) + column (N − Σ n_.j²/N) + residual (N − 1)

    When the system is singular (one row, one column, or every answer in its own row), the
    components that cannot be told apart are folded into the residual.
    """
    y, r, c = _clean(values, rows, columns)
    return _components(y, *_codes(r), *_codes(c))


def _components(
    y: np.ndarray, rows: np.ndarray, n_rows: int, columns: np.ndarray, n_columns: int
) -> Components:
    n = y.size
    if n < 2:
        return Components(0.0, 0.0, 0.0, n, n_rows, n_columns, 1)
    # Centre first: the sums of squares below subtract large similar numbers otherwise.
    y = y - y.mean()
    row_counts = np.bincount(rows, minlength=n_rows).astype(np.float64)
    column_counts = np.bincount(columns, minlength=n_columns).astype(np.float64)
    u_rows = _within_ss(y, rows, n_rows)
    u_columns = _within_ss(y, columns, n_columns)
    u_total = float(np.sum(y * y))
    matrix = np.array(
        [
            [0.0, n - n_rows, n - n_rows],
            [n - n_columns, 0.0, n - n_columns],
            [n - np.sum(row_counts**2) / n, n - np.sum(column_counts**2) / n, n - 1.0],
        ]
    )
    target = np.array([u_rows, u_columns, u_total])
    # A component the design cannot identify (one participant; one source; every answer alone in
    # its row or column) is set to 0 so that its share stays in the residual.
    unknowns = [2]
    if n_rows > 1 and n > n_rows:
        unknowns.append(0)
    if n_columns > 1 and n > n_columns:
        unknowns.append(1)
    solution = np.zeros(3)
    solution[unknowns] = np.linalg.lstsq(matrix[:, unknowns], target, rcond=None)[0]
    row, column, residual = (max(0.0, float(v)) for v in solution)
    residual_df = n - 1 - (n_rows - 1 if 0 in unknowns else 0) - (n_columns - 1 if 1 in unknowns else 0)
    return Components(row, column, residual, n, n_rows, n_columns, max(residual_df, 1))


def _interval(
    estimate: float,
    parts: tuple[float, float, float],
    components: Components,
    confidence: float,
    n: int,
) -> CrossedInterval:
    # parts: the three variance contributions (row, column, residual) of the estimator.
    variance = sum(parts)
    shape = (n, components.n_rows, components.n_columns)
    if not math.isfinite(estimate):
        return CrossedInterval(None, None, None, None, None, *shape)
    if n < 2 or variance <= 0:
        return CrossedInterval(estimate, None, None, None, None, *shape)
    dfs = (max(components.n_rows - 1, 1), max(components.n_columns - 1, 1), components.residual_df)
    df = variance**2 / sum(p * p / d for p, d in zip(parts, dfs, strict=True) if p > 0)
    se = math.sqrt(variance)
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    return CrossedInterval(estimate, estimate - half, estimate + half, se, float(df), *shape)


def _linear(
    estimate: float,
    weights: np.ndarray,
    rows: np.ndarray,
    columns: np.ndarray,
    components: Components,
    confidence: float,
) -> CrossedInterval:
    # The interval of sum(weights · y) (Owen 2007's variance of a linear statistic).
    row_weights = np.bincount(rows, weights=weights, minlength=components.n_rows)
    column_weights = np.bincount(columns, weights=weights, minlength=components.n_columns)
    parts = (
        components.row * float(np.sum(row_weights**2)),
        components.column * float(np.sum(column_weights**2)),
        components.residual * float(np.sum(weights**2)),
    )
    used = int(np.count_nonzero(weights))
    interval = _interval(estimate, parts, components, confidence, used)
    return CrossedInterval(
        interval.estimate,
        interval.low,
        interval.high,
        interval.se,
        interval.df,
        used,
        int(np.count_nonzero(row_weights != 0)),
        int(np.count_nonzero(column_weights != 0)),
    )


def crossed_mean_ci(values, rows, columns, *, confidence: float = 0.95) -> CrossedInterval:
    """The mean of ``values`` (NaN dropped) with its interval under the crossed model."""
    means, _ = crossed_group_intervals(values, rows, columns, np.zeros(len(values)), confidence=confidence)
    return means.get(0.0, CrossedInterval(None, None, None, None, None, 0, 0, 0))


def crossed_group_intervals(values, rows, columns, groups, *, confidence: float = 0.95) -> tuple[dict, dict]:
    """``(means, differences)`` of answers in fixed groups (systems) that share participants and
    sources: ``means[g]`` is group g's mean and ``differences[(a, b)]`` mean(a) − mean(b) for
    every pair of groups in sorted order, each with its interval.

    The variance components are estimated once on all the answers, each centred on its group's
    mean (the groups are fixed effects, with one residual degree of freedom less per extra
    group): every group's interval borrows the participants and sources of the others, which
    brings a system seen by each participant on a quarter of the sources to its nominal coverage.
    A participant or source seen in both groups of a difference contributes the difference of
    its weights, so what it shares cancels, as it does in the estimator.
    """
    y = np.asarray(values, dtype=np.float64).ravel()
    g = np.asarray(groups).ravel()
    r = np.asarray(rows).ravel()
    c = np.asarray(columns).ravel()
    if not (y.size == g.size == r.size == c.size):
        raise ValueError("values, rows, columns and groups must have the same length")
    keep = ~np.isnan(y)
    y, g, r, c = y[keep], g[keep], r[keep], c[keep]
    if y.size == 0:
        return {}, {}
    group_codes, labels = _codes_and_labels(g)
    row_codes, n_rows = _codes(r)
    column_codes, n_columns = _codes(c)
    counts = np.bincount(group_codes, minlength=labels.size).astype(np.float64)
    group_means = np.bincount(group_codes, weights=y, minlength=labels.size) / counts
    pooled = _components(y - group_means[group_codes], row_codes, n_rows, column_codes, n_columns)
    components = Components(
        pooled.row,
        pooled.column,
        pooled.residual,
        pooled.n,
        pooled.n_rows,
        pooled.n_columns,
        max(pooled.residual_df - (labels.size - 1), 1),
    )
    indicator = [(group_codes == k).astype(np.float64) for k in range(labels.size)]
    means = {}
    for k, label in enumerate(labels):
        means[label.item() if hasattr(label, "item") else label] = _linear(
            float(group_means[k]), indicator[k] / counts[k], row_codes, column_codes, components, confidence
        )
    differences = {}
    for i in range(labels.size):
        for j in range(i + 1, labels.size):
            weights = indicator[i] / counts[i] - indicator[j] / counts[j]
            key = tuple(label.item() if hasattr(label, "item") else label for label in (labels[i], labels[j]))
            differences[key] = _linear(
                float(group_means[i] - group_means[j]),
                weights,
                row_codes,
                column_codes,
                components,
                confidence,
            )
    return means, differences


def crossed_difference_ci(
    values_a, rows_a, columns_a, values_b, rows_b, columns_b, *, confidence: float = 0.95
) -> CrossedInterval:
    """mean(a) − mean(b) with its interval, for two groups of answers that share participants
    and sources (e.g. two systems rated by the same people on the same sources); see
    ``crossed_group_intervals``."""
    values_a, values_b = np.asarray(values_a, dtype=np.float64), np.asarray(values_b, dtype=np.float64)
    groups = np.concatenate([np.zeros(values_a.size), np.ones(values_b.size)])
    _, differences = crossed_group_intervals(
        np.concatenate([values_a, values_b]),
        np.concatenate([np.asarray(rows_a), np.asarray(rows_b)]),
        np.concatenate([np.asarray(columns_a), np.asarray(columns_b)]),
        groups,
        confidence=confidence,
    )
    empty = CrossedInterval(None, None, None, None, None, int(values_a.size + values_b.size), 0, 0)
    return differences.get((0.0, 1.0), empty)
