"""Inter-annotator agreement: Krippendorff's alpha (MASI sets, nominal … ratio), Cohen's kappa, ICC.

Pure computation: no Django. Inputs are plain Python, numpy or pandas; selectors in
``evaluation/analysis/study_frames.py`` build them from the database (coder = participant, unit = source).

Undefined statistics (no unit rated twice, no variation in the data, fewer than two shared units)
come back as ``nan`` from the alpha functions and as ``None`` in record-style results, so a
dashboard on an early study shows "not yet" instead of crashing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Literal, NamedTuple, TypeAlias

import krippendorff
import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.metrics import cohen_kappa_score

# ---------------------------------------------------------------------------------------------
# MASI distance
# ---------------------------------------------------------------------------------------------

# Passonneau (2006) prints the monotonicity weights as 0.67 and 0.33; NLTK (checked in 3.9/3.10)
# uses the exact fractions 2/3 and 1/3. We follow NLTK so values agree bit for bit.
_MASI_SUBSET = 2 / 3
_MASI_OVERLAP = 1 / 3


def masi_distance(a: AbstractSet[Any], b: AbstractSet[Any]) -> float:
    """MASI distance, ``1 - jaccard(a, b) * m``, as ``nltk.metrics.distance.masi_distance``.

    ``m`` is 1 for equal sets, 2/3 when one is a subset of the other, 1/3 when they overlap and 0
    when they are disjoint. Unlike NLTK, two empty sets are at distance 0 (NLTK divides by zero):
    an empty selection ("none of them") is a legitimate answer and must agree with itself.
    """
    intersection = len(a & b)
    union = len(a | b)
    if union == 0:
        return 0.0
    if len(a) == len(b) == intersection:
        m = 1.0
    elif intersection == min(len(a), len(b)):
        m = _MASI_SUBSET
    elif intersection > 0:
        m = _MASI_OVERLAP
    else:
        m = 0.0
    # Same operation order as NLTK, so the float result is identical.
    return 1 - intersection / union * m


def masi_distance_matrix(values: Sequence[AbstractSet[Any]]) -> np.ndarray:
    """Pairwise MASI distances between ``values`` (V sets) as a V×V float array.

    Vectorised through a V×L membership matrix (L = distinct elements), so it stays cheap for
    the thousands of distinct sets a large study can produce; equal to ``masi_distance`` entrywise.
    """
    elements = sorted({e for value in values for e in value}, key=repr)
    position = {e: i for i, e in enumerate(elements)}
    membership = np.zeros((len(values), len(elements)), dtype=np.float64)
    for row, value in enumerate(values):
        membership[row, [position[e] for e in value]] = 1.0
    size = membership.sum(axis=1)
    intersection = membership @ membership.T
    union = size[:, None] + size[None, :] - intersection
    smaller = np.minimum(size[:, None], size[None, :])
    equal = (size[:, None] == size[None, :]) & (intersection == size[:, None])
    m = np.where(
        equal,
        1.0,
        np.where(intersection == smaller, _MASI_SUBSET, np.where(intersection > 0, _MASI_OVERLAP, 0.0)),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        distance: np.ndarray = 1 - intersection / union * m
    distance[union == 0] = 0.0
    return distance


# ---------------------------------------------------------------------------------------------
# Krippendorff's alpha for set-valued annotations (MASI)
# ---------------------------------------------------------------------------------------------

SetLabel: TypeAlias = AbstractSet[Any] | None
#: ``{coder: {unit: set | None}}`` or a list of ``{unit: set | None}``, one per coder (an absent
#: unit = missing); or a units×coders table: a DataFrame (index = units, columns = coders) or a
#: list of rows, one per unit. ``None``/NaN = missing.
SetAnnotations: TypeAlias = (
    Mapping[Hashable, Mapping[Hashable, SetLabel]]
    | Sequence[Mapping[Hashable, SetLabel]]
    | pd.DataFrame
    | Sequence[Sequence[SetLabel]]
)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _as_label(value: Any) -> frozenset[Any] | None:
    if _is_missing(value):
        return None
    if isinstance(value, frozenset):
        return value
    # A str is iterable but is never a set of systems here; frozenset("ab") would silently
    # become {"a", "b"}.
    if not isinstance(value, AbstractSet):
        raise TypeError(f"set-valued annotation expected (set/frozenset/None), got {type(value).__name__}")
    return frozenset(value)


def _annotation_cells(
    data: SetAnnotations, *, with_coders: bool = True
) -> tuple[list[Any], list[Any], list[Any]]:
    """Flatten ``data`` into parallel lists (coder, unit, raw label), missing cells included.

    ``with_coders=False`` leaves the coder list empty: alpha only needs units and labels, and
    building a 10-million-entry list for nothing costs a noticeable share of the fast path.
    """
    if not isinstance(data, Mapping | pd.DataFrame):
        data = list(data)
        if data and all(isinstance(per_coder, Mapping) for per_coder in data):
            data = dict(enumerate(data))  # a list of {unit: set}, one per coder
        elif any(isinstance(row, Mapping) for row in data):
            raise TypeError("mix of mappings and rows: pass {coder: {unit: set}} or units×coders rows")
    if isinstance(data, Mapping):
        coders: list[Any] = []
        units: list[Any] = []
        labels: list[Any] = []
        for coder, per_unit in data.items():
            if with_coders:
                coders.extend(itertools.repeat(coder, len(per_unit)))
            units.extend(per_unit.keys())
            labels.extend(per_unit.values())
        return coders, units, labels
    if isinstance(data, pd.DataFrame):
        table = data.to_numpy(dtype=object)
        unit_keys, coder_keys = list(data.index), list(data.columns)
    else:
        rows = [list(row) for row in data]
        width = max((len(row) for row in rows), default=0)
        if any(len(row) != width for row in rows):
            raise ValueError("units×coders rows must all have one cell per coder (None = missing)")
        table = _object_array([cell for row in rows for cell in row]).reshape(len(rows), width)
        unit_keys, coder_keys = list(range(len(rows))), list(range(width))
    n_units, n_coders = table.shape
    units = np.repeat(_object_array(unit_keys), n_coders).tolist()
    coders = np.tile(_object_array(coder_keys), n_units).tolist() if with_coders else []
    return coders, units, table.ravel().tolist()


def _object_array(items: Sequence[Any]) -> np.ndarray:
    # np.fromiter keeps each item whole; np.asarray would unpack tuple keys into a 2-D array.
    return np.fromiter(items, dtype=object, count=len(items))


def set_annotation_triples(data: SetAnnotations) -> Iterator[tuple[Hashable, Hashable, frozenset[Any]]]:
    """``(coder, unit, frozenset)`` for every non-missing annotation: NLTK's AnnotationTask format."""
    for coder, unit, label in zip(*_annotation_cells(data), strict=True):
        label = _as_label(label)
        if label is not None:
            yield coder, unit, label


def _encode_sets(data: SetAnnotations) -> tuple[np.ndarray, np.ndarray, list[frozenset[Any]]]:
    """Integer codes (unit, value) for non-missing annotations, plus the distinct set values."""
    _, units, labels = _annotation_cells(data, with_coders=False)
    return _encode_cells(_object_array(units), _object_array(labels))


def _encode_cells(
    units: np.ndarray, label_array: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[frozenset[Any]]]:
    """``_encode_sets`` of aligned object arrays of units and labels."""
    try:
        # Hashes each frozenset once in C; None/NaN become the -1 sentinel (missing).
        value_codes, distinct = pd.factorize(label_array)
    except TypeError:  # unhashable input such as plain sets: normalise, then factorise
        label_array = _object_array([_as_label(label) for label in label_array])
        value_codes, distinct = pd.factorize(label_array)
    # factorize leaves the missing cells (code -1) out of `distinct`: every distinct value is a set.
    distinct_values = [label for label in map(_as_label, distinct) if label is not None]
    unit_codes, _ = pd.factorize(units, use_na_sentinel=False)
    present = value_codes >= 0
    return unit_codes[present], value_codes[present], distinct_values


# Above this many units×values cells the count table is kept sparse (e.g. free-form label sets).
_DENSE_COUNTS_LIMIT = 20_000_000


def _alpha_from_codes(unit_codes: np.ndarray, value_codes: np.ndarray, distance: np.ndarray) -> float:
    """Krippendorff's alpha from (unit, value) codes and a V×V distance matrix with zero diagonal.

    Standard coincidence-matrix form (Krippendorff 2011, "Computing Krippendorff's alpha"):
    o_ck = Σ_u n_uc (n_uk − δ_ck) / (m_u − 1) over units with m_u ≥ 2 values,
    alpha = 1 − (n − 1) Σ o_ck d_ck / Σ n_c n_k d_ck.
    """
    n_values = distance.shape[0]
    n_units = int(unit_codes.max()) + 1 if unit_codes.size else 0
    per_unit = np.bincount(unit_codes, minlength=n_units)
    pairable = per_unit >= 2  # a unit coded once has no pair: Krippendorff drops it
    if not pairable.any():
        return math.nan
    weight = np.zeros(n_units)
    weight[pairable] = 1.0 / (per_unit[pairable] - 1.0)
    if n_units * n_values <= _DENSE_COUNTS_LIMIT:
        # The usual case (k systems → at most 2^k distinct sets): a dense units×values count
        # table from one bincount is an order of magnitude faster than a sparse matrix.
        counts = np.bincount(unit_codes * n_values + value_codes, minlength=n_units * n_values)
        counts = counts.reshape(n_units, n_values).astype(np.float64)
        products = counts.T @ (counts * weight[:, None])
    else:
        counts = sparse.csr_matrix(
            (np.ones(unit_codes.size), (unit_codes, value_codes)), shape=(n_units, n_values)
        )
        products = (counts.T @ (sparse.diags(weight) @ counts)).toarray()
    # Within a unit a value is not paired with itself: remove n_uc / (m_u - 1) from the diagonal.
    self_pairs = np.bincount(value_codes, weights=weight[unit_codes], minlength=n_values)
    coincidences = products - np.diag(self_pairs)
    n_c = coincidences.sum(axis=0)
    n = n_c.sum()
    expected = n_c @ distance @ n_c
    if expected == 0:  # no variation among pairable values: alpha is 0/0
        return math.nan
    return float(1.0 - (n - 1.0) * (coincidences * distance).sum() / expected)


def krippendorff_alpha_sets(data: SetAnnotations, *, method: Literal["fast", "nltk"] = "fast") -> float:
    """Krippendorff's alpha with MASI distance for set-valued annotations.

    ``method="fast"`` (default) encodes each distinct set once, builds the coincidence matrix
    over the distinct sets with one bincount and a V×V product, and computes the MASI distances
    between distinct sets once. ``method="nltk"`` is the reference:
    ``AnnotationTask(distance=masi_distance).alpha()``.

    Both drop units coded by fewer than two coders and agree to floating-point rounding on any
    data with variation. They differ only in degenerate cases, where the fast path follows the
    textbook definition (and the ``krippendorff`` package, which refuses such data):

    - no variation among the pairable values (everyone chose the same set): NLTK returns 1,
      the fast path returns ``nan`` (alpha = 0/0 is undefined);
    - no unit coded by two coders: NLTK raises (ZeroDivisionError/ValueError), fast path ``nan``;
    - an empty set: NLTK's MASI divides by zero on two empty sets; here d(∅, ∅) = 0.
    """
    if method == "nltk":
        from nltk.metrics.agreement import AnnotationTask
        from nltk.metrics.distance import masi_distance as nltk_masi_distance

        task = AnnotationTask(data=list(set_annotation_triples(data)), distance=nltk_masi_distance)
        return float(task.alpha())
    if method != "fast":
        raise ValueError(f"unknown method {method!r}; use 'fast' or 'nltk'")
    unit_codes, value_codes, distinct = _encode_sets(data)
    if not distinct:
        return math.nan
    return _alpha_from_codes(unit_codes, value_codes, masi_distance_matrix(distinct))


def krippendorff_alpha_set_cells(units: Sequence[Hashable], labels: Sequence[SetLabel]) -> float:
    """``krippendorff_alpha_sets`` (fast) of annotations given as two aligned sequences, one
    entry per (coder, unit) annotation: its unit and its set (None/NaN = missing). The coders
    themselves do not enter alpha. Equal to ``krippendorff_alpha_sets({coder: {unit: set}})`` of
    the same annotations listed coder by coder, without building the nested mappings (a large
    study has hundreds of thousands of annotations)."""
    unit_array, label_array = _object_array(list(units)), _object_array(list(labels))
    if unit_array.size != label_array.size:
        raise ValueError("units and labels must be aligned")
    unit_codes, value_codes, distinct = _encode_cells(unit_array, label_array)
    if not distinct:
        return math.nan
    return _alpha_from_codes(unit_codes, value_codes, masi_distance_matrix(distinct))


# ---------------------------------------------------------------------------------------------
# Krippendorff's alpha for scalar ratings
# ---------------------------------------------------------------------------------------------


def krippendorff_alpha(
    reliability_data: np.ndarray | Sequence[Sequence[float]],
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "interval",
    *,
    value_domain: Sequence[float] | None = None,
) -> float:
    """Krippendorff's alpha of a coders×units array (``nan`` = missing) via the ``krippendorff`` package.

    For ``ordinal``, pass the full scale as ``value_domain`` (e.g. 1..5) so that unused levels still
    count in the rank distances. Returns ``nan`` when alpha is undefined (no unit coded twice, or
    no variation among pairable values) instead of the package's ValueError / 0-by-0 division.
    """
    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"unknown level of measurement {level!r}")
    data = np.asarray(reliability_data, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError("reliability_data must be 2-D: coders × units")
    observed = ~np.isnan(data)
    pairable = observed.sum(axis=0) >= 2
    pairable_values = data[:, pairable][observed[:, pairable]]
    if pairable_values.size == 0 or np.unique(pairable_values).size < 2:
        return math.nan
    return float(
        krippendorff.alpha(
            reliability_data=data,
            value_domain=None if value_domain is None else np.asarray(value_domain, dtype=np.float64),
            level_of_measurement=level,
        )
    )


# ---------------------------------------------------------------------------------------------
# Pairwise Cohen's kappa
# ---------------------------------------------------------------------------------------------


class PairwiseKappa(NamedTuple):
    """Per-pair records ``{rater_a, rater_b, n, kappa}`` and the mean of the defined kappas."""

    pairs: list[dict[str, Any]]
    mean: float | None


def cohen_kappa_pairwise(
    ratings: Mapping[Hashable, Mapping[Hashable, Any]],
    weights: Literal["linear", "quadratic"] | None = "quadratic",
    *,
    labels: Sequence[Any] | None = None,
) -> PairwiseKappa:
    """Cohen's kappa (sklearn) for every pair of raters, on the units both rated.

    ``ratings`` is ``{rater: {unit: value}}``; ``None``/NaN values count as not rated. Weighted
    kappa weighs by the *position* of a value among ``labels``: pass the whole scale (e.g.
    ``labels=[1, 2, 3, 4, 5]``) so a pair that never used some level is weighted on the same
    scale as the others. A pair with fewer than two shared units, or whose kappa is 0/0 (both
    raters constant), gets ``kappa=None`` and is left out of the mean.
    """
    pairs: list[dict[str, Any]] = []
    for rater_a, rater_b in itertools.combinations(ratings, 2):
        a, b = ratings[rater_a], ratings[rater_b]
        shared = [u for u in a if u in b and not _is_missing(a[u]) and not _is_missing(b[u])]
        kappa: float | None = None
        if len(shared) >= 2:
            with np.errstate(divide="ignore", invalid="ignore"):
                value = cohen_kappa_score(
                    [a[u] for u in shared], [b[u] for u in shared], labels=labels, weights=weights
                )
            kappa = None if math.isnan(value) else float(value)
        pairs.append({"rater_a": rater_a, "rater_b": rater_b, "n": len(shared), "kappa": kappa})
    defined = [p["kappa"] for p in pairs if p["kappa"] is not None]
    return PairwiseKappa(pairs=pairs, mean=float(np.mean(defined)) if defined else None)


def cohen_kappa_pairwise_grid(
    grid: np.ndarray,
    raters: Sequence[Hashable],
    weights: Literal["linear", "quadratic"] | None = "quadratic",
    *,
    labels: Sequence[Any] | None = None,
) -> PairwiseKappa:
    """``cohen_kappa_pairwise`` of a raters × units array (NaN = not rated; row i is
    ``raters[i]``): the same pairs, in the same order, on the units both rated, without a mapping
    per rater (kappa depends on the pairs of values, not on their order)."""
    grid = np.asarray(grid, dtype=np.float64)
    if grid.ndim != 2 or grid.shape[0] != len(raters):
        raise ValueError("grid must be 2-D with one row per rater")
    rated = ~np.isnan(grid)
    pairs: list[dict[str, Any]] = []
    for i, j in itertools.combinations(range(len(raters)), 2):
        shared = rated[i] & rated[j]
        n = int(shared.sum())
        kappa: float | None = None
        if n >= 2:
            with np.errstate(divide="ignore", invalid="ignore"):
                value = cohen_kappa_score(grid[i, shared], grid[j, shared], labels=labels, weights=weights)
            kappa = None if math.isnan(value) else float(value)
        pairs.append({"rater_a": raters[i], "rater_b": raters[j], "n": n, "kappa": kappa})
    defined = [p["kappa"] for p in pairs if p["kappa"] is not None]
    return PairwiseKappa(pairs=pairs, mean=float(np.mean(defined)) if defined else None)


# ---------------------------------------------------------------------------------------------
# Intraclass correlation
# ---------------------------------------------------------------------------------------------


class IccResult(NamedTuple):
    """Shrout & Fleiss (1979) ICCs with the two-way ANOVA mean squares they come from."""

    icc2_1: float  # two-way random, absolute agreement, single rater
    icc3_1: float  # two-way mixed, consistency, single rater
    icc2_k: float  # ... mean of k raters
    icc3_k: float
    n_units: int
    n_raters: int
    ms_units: float  # "BMS": between targets
    ms_raters: float  # "JMS": between judges
    ms_error: float  # "EMS": residual


def two_way_mean_squares(x: np.ndarray) -> tuple[np.float64, np.float64, np.float64]:
    """The mean squares of units, raters and error of a complete units×raters grid (the two-way
    ANOVA without replication of Shrout & Fleiss), the one computation every ICC here reads.

    The error sum of squares is the residuals' own, not total - units - raters: that subtraction
    can fall a rounding error below zero when the raters agree exactly, and lift an ICC above 1."""
    n, k = x.shape
    grand = x.mean()
    unit_means = x.mean(axis=1, keepdims=True)
    rater_means = x.mean(axis=0, keepdims=True)
    ss_units = k * ((unit_means - grand) ** 2).sum()
    ss_raters = n * ((rater_means - grand) ** 2).sum()
    ss_error = ((x - unit_means - rater_means + grand) ** 2).sum()
    # numpy floats, not Python's: a grid with no spread divides 0 by 0 into NaN, as it always has.
    return (
        np.float64(ss_units / (n - 1)),
        np.float64(ss_raters / (k - 1)),
        np.float64(ss_error / ((n - 1) * (k - 1))),
    )


def icc(
    ratings: pd.DataFrame, *, unit: str = "unit", rater: str = "rater", score: str = "score"
) -> IccResult:
    """ICC(2,1), ICC(3,1) (and their k-rater means) from a long table of (unit, rater, score).

    The two-way ANOVA needs a complete units×raters grid: units that some rater did not score
    (or scored NaN) are dropped, as pingouin's ``nan_policy="omit"`` does. Duplicated
    (unit, rater) rows are an error, not averaged, because they usually signal an import bug.
    """
    frame = ratings[[unit, rater, score]]
    if frame.duplicated([unit, rater]).any():
        raise ValueError("each (unit, rater) must have one score")
    grid = frame.pivot(index=unit, columns=rater, values=score).astype(np.float64).dropna(axis=0)
    n, k = grid.shape
    if n < 2 or k < 2:
        raise ValueError(f"ICC needs at least 2 fully rated units and 2 raters (got {n}×{k})")
    bms, jms, ems = two_way_mean_squares(grid.to_numpy())
    return IccResult(
        icc2_1=float((bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n)),
        icc3_1=float((bms - ems) / (bms + (k - 1) * ems)),
        icc2_k=float((bms - ems) / (bms + (jms - ems) / n)),
        icc3_k=float((bms - ems) / bms),
        n_units=n,
        n_raters=k,
        ms_units=float(bms),
        ms_raters=float(jms),
        ms_error=float(ems),
    )
