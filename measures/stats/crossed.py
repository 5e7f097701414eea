"""Intervals for means of crossed data: every answer belongs to one participant (row) and one source
(column), and both are samples from larger populations.

Models (all effects independent, normal in the derivations, estimated by the method of moments):

* **A system's mean** (or any single group's) is estimated from that group's own answers only:
  ``y = mu + a_participant + b_source + e`` with variances ``row``, ``column``, ``residual``. A
  participant's effect on this system already contains its participant × system interaction,
  and the residual is this system's own: nothing is borrowed from other systems, whose answers
  may vary more or less (in the 2024 release plain_bs answers vary 1.04 against 0.29 for
  cot_sc).
* **A difference of two systems** is estimated from those two systems' answers only:
  ``y = mu_system + a_participant + b_source + ab_participant×system + bb_source×system + e``
  (``_DifferenceModel``). The participant × system interaction does not cancel in a difference
  (a participant helped more by one system than the other moves the difference in the same
  direction on all its answers), so without it a difference's interval covers 62–83 % when the
  interaction variance is 0.05–0.25. The source × system term is kept only where its F test
  rejects at ``POOLING_P`` (``_difference_variance``). One residual variance over the two
  systems' answers: with equal numbers of answers per system the difference's variance depends
  only on the sum of the two, so this is exact in a Latin square.

The variance of any linear estimator ``sum_k w_k y_k`` under such a model, for any pattern of
observed cells, is (Owen 2007, section 3)

    Var = sum_q  sigma²_q · sum_{levels l of q} (sum_{k in l} w_k)²

and the components ``sigma²_q`` are estimated by the method of moments (Gao & Owen 2017,
section 3; Henderson's method for unbalanced data) from sums of squares whose expectations are
linear in the components and computed exactly from the design: for a mean, the between-
participants, between-sources and remaining sums of squares (``_MomentModel``, expectations from
the design's counts in ``_expected_form``; the two-way ANOVA estimators in a complete table); for
a difference, those of least-squares fits with the effects as blocks (``_DifferenceModel``). A
component the design cannot tell apart from others (one participant; one answer per source) is
dropped and its share stays in the residual, which is exact for the estimators that are used.
Components are truncated at 0 for reporting; the variance of an estimator is the unbiased
combination of the sums of squares (truncated components only where that is not positive).

The interval is ``estimate ± t · SE`` with Satterthwaite's degrees of freedom for the variance
estimate written as a combination of the sums of squares, each a scaled chi-square with its
degrees of freedom; this is what brings a study with few participants to its nominal coverage.
Bounded quantities keep their bounds:

* a mean of values bounded in ``[low, high]`` (a proportion, a Likert mean, an MSE up to its
  largest possible squared error) gets the Wilson score interval on the ``[0, 1]``-rescaled mean
  with the design's effective sample size ``m (1 − m) / SE²`` (Kish's design effect) and the same
  t quantile: it is the t interval when the mean is far from its bounds, and stays inside them
  near 0 and 1 (with every answer at a bound the effective size is the number of answers); a
  proportion with fewer than ``RARE_EVENTS`` effective events gets Korn & Graubard's (1998)
  Clopper–Pearson interval instead;
* a difference of two such means gets the MOVER interval from the two means' intervals
  (``_mover``), kept within ``[low − high, high − low]``;
* a mean count or rate (``rates=True``: spans per text, per 100 words, a count item without a
  largest value; at least 0, no upper end) gets the Poisson score interval with the design's
  effective exposure ``m / SE²`` and the t quantile (``_rate_interval``), and a difference of two
  the MOVER interval from their score intervals.

Every interval carries its quantity's support (measures/stats/support.py) and passes through
``Support.bound``: inside the support and around its estimate (docs/analysis/intervals.md).

Below ``MIN_PARTICIPANTS`` participants or ``MIN_SOURCES`` sources an interval is not computed:
the estimate comes with ``low = high = None`` and ``reason = TOO_FEW``.

Coverage on simulated Latin squares and what is out of scope: docs/analysis/intervals.md and
tests/measures/stats/test_crossed_coverage.py.

Pure numpy/pandas/scipy: no Django. Everything is O(n) (bincount and sparse products), and the
estimators take a batch of value vectors on one design, which the coverage tests use.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import sparse, stats

from measures.stats.interval_methods import (
    METHOD_MOVER,
    METHOD_MOVER_RATE,
    METHOD_RATE,
    METHOD_T,
    METHOD_WILSON,
    MIN_PARTICIPANTS,
    MIN_SOURCES,
    POOLING_P,
    RARE_EVENTS,
    TOO_FEW,
)
from measures.stats.support import REAL, Support, difference_support, support_of


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
    method: str = METHOD_T
    reason: str | None = None  # why low/high are None while the estimate is known
    support: Support = REAL  # the range the estimate and both ends cannot leave


@dataclass(frozen=True)
class PairComponents:
    """The variance components of two systems' answers (the difference model): participant,
    source, participant × system interaction (None where the design cannot identify it: no
    participant saw both systems) and residual."""

    row: float
    column: float
    interaction: float | None
    column_interaction: float | None
    residual: float


# --- the general moment estimator -------------------------------------------------------------


@dataclass(frozen=True)
class _Effect:
    name: str
    codes: np.ndarray  # level of each answer, −1 where the answer has no such effect
    n_levels: int

    def indicator(self) -> sparse.csr_matrix:
        inside = np.flatnonzero(self.codes >= 0)
        return sparse.csr_matrix(
            (np.ones(inside.size), (inside, self.codes[inside])), shape=(self.codes.size, self.n_levels)
        )

    def weight_sums(self, weights: np.ndarray) -> np.ndarray:
        inside = self.codes >= 0
        return np.bincount(self.codes[inside], weights=weights[inside], minlength=self.n_levels)

    def counts_by_group(self, groups: np.ndarray, n_groups: int) -> np.ndarray:
        inside = self.codes >= 0
        flat = np.bincount(self.codes[inside] * n_groups + groups[inside], minlength=self.n_levels * n_groups)
        return flat.reshape(self.n_levels, n_groups).astype(np.float64)


def _expected_form(effect: _Effect, form: _Effect, groups: np.ndarray, group_counts: np.ndarray) -> float:
    """E[F_form] per unit variance of ``effect``, for the between-levels sum of squares
    ``F = sum_c (sum_{k in c} r_k)² / n_c`` of the residuals r about the group means:
    ``sum_c ||Z_effectᵀ M 1_c||² / n_c`` where M removes the group means. With n_lc the answers in
    effect level l and form level c, n_lg / n_cg those in group g, that is
    ``sum_lc (n_lc − sum_g n_lg n_cg / n_g)² / n_c``, expanded so that only the observed (l, c)
    pairs and the (levels × groups) count tables are needed."""
    both = (effect.codes >= 0) & (form.codes >= 0)
    pairs, counts = np.unique(effect.codes[both] * form.n_levels + form.codes[both], return_counts=True)
    levels, cells = pairs // form.n_levels, pairs % form.n_levels
    by_level = effect.counts_by_group(groups, group_counts.size)
    by_cell = form.counts_by_group(groups, group_counts.size)
    size = by_cell.sum(axis=1)
    inverse = np.divide(1.0, size, out=np.zeros_like(size), where=size > 0)
    counts = counts.astype(np.float64)
    first = float(np.sum(counts**2 * inverse[cells]))
    second = float(
        np.sum((counts * inverse[cells])[:, None] * by_level[levels] * by_cell[cells] / group_counts)
    )
    cell_products = by_cell.T @ (by_cell * inverse[:, None])
    third = float(np.sum((by_level.T @ by_level) * cell_products / np.outer(group_counts, group_counts)))
    return first - 2 * second + third


# ``orthogonal(kept, levels)`` of a _MomentModel: (combinations of raw forms, their df).
_Orthogonal = Callable[[list[str], dict[str, int]], tuple[list[dict[str, float]], list[int]]]


class _ComponentModel:
    """What _MomentModel and _DifferenceModel share: the variance of a linear combination of
    the answers from the fitted components and forms."""

    inverse: np.ndarray
    matrix: np.ndarray
    df: np.ndarray

    def coefficients(self, weights: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def variance(
        self, weights: np.ndarray, components: np.ndarray, forms: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(variance, df)`` of ``weights · y`` for each row of the batch.

        The variance is estimated without truncating the components, ``c · forms`` with
        ``c = A⁻ᵀ a``: unbiased, and in a balanced table the classical combination of mean squares
        (for one system in a Latin square, the between-participants mean square over N). Where
        that is not positive the truncated components are used. Satterthwaite's degrees of
        freedom treat each form as an independent scaled chi-square."""
        coefficients = self.coefficients(weights)
        c = self.inverse.T @ coefficients
        variance = forms @ c
        terms = forms * c
        fallback = variance <= 0
        if fallback.any():
            variance = np.where(fallback, components @ coefficients, variance)
            terms[fallback] = (components[fallback] @ self.matrix.T) * c
        spread = np.sum(terms**2 / self.df, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = np.where(spread > 0, variance**2 / spread, np.inf)
        return variance, np.maximum(df, 1.0)


class _MomentModel(_ComponentModel):
    """Moment estimates of the variances of ``effects`` around fixed group means, for one design
    and any number of value vectors on it.

    ``cells``: the groupings whose between-levels sums of squares are the raw forms (every
    effect's own levels among them, under the effect's name). ``orthogonal(kept, levels)`` returns,
    for each identifiable effect, a combination of raw forms (a dict name → coefficient) and its
    degrees of freedom: the ANOVA sums of squares of the design (between participants, between
    participant × system cells within participants, within cells, …), which are independent in a
    balanced design and nearly so otherwise. They give the estimating equations and
    Satterthwaite's degrees of freedom."""

    def __init__(
        self,
        groups: np.ndarray,
        n_groups: int,
        effects: list[_Effect],
        cells: dict[str, _Effect],
        drop_order: list[str],
        orthogonal: _Orthogonal,
    ):
        self.groups = groups
        self.group_counts = np.bincount(groups, minlength=n_groups).astype(np.float64)
        names = list(cells)
        raw = np.array(
            [
                [_expected_form(effect, cells[name], groups, self.group_counts) for effect in effects]
                for name in names
            ]
        )
        kept = list(range(len(effects)))
        # Drop what the design cannot identify (an effect in the span of the others), in order.
        for name in drop_order:
            if np.linalg.matrix_rank(raw[:, kept]) == len(kept):
                break
            index = next(i for i, effect in enumerate(effects) if effect.name == name)
            rest = [i for i in kept if i != index]
            if index in kept and np.linalg.matrix_rank(raw[:, rest]) == np.linalg.matrix_rank(raw[:, kept]):
                kept = rest
        self.effects = [effects[i] for i in kept]
        ones = np.ones(groups.size)
        levels = {name: int(np.count_nonzero(cell.weight_sums(ones))) for name, cell in cells.items()}
        combinations, df = orthogonal([e.name for e in self.effects], levels)
        self.combinations = np.array(
            [[combination.get(name, 0.0) for name in names] for combination in combinations]
        )
        self.df = np.maximum(np.asarray(df, dtype=np.float64), 1.0)
        self.matrix = self.combinations @ raw[:, kept]
        self.inverse = np.linalg.pinv(self.matrix)
        self.indicators = [cells[name].indicator() for name in names]
        self.sizes = [
            np.maximum(np.asarray(indicator.sum(axis=0)).ravel(), 1.0) for indicator in self.indicators
        ]

    def fit(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(components, forms)`` for a (batch × answers) array: the non-negative components
        (batch × kept effects) and the orthogonal forms (batch × kept effects)."""
        sums = np.zeros((values.shape[0], self.group_counts.size))
        for g in range(self.group_counts.size):
            sums[:, g] = values[:, self.groups == g].sum(axis=1)
        residuals = (values - (sums / self.group_counts)[:, self.groups]).T
        raw = np.column_stack(
            [
                np.sum(np.asarray(indicator.T @ residuals) ** 2 / size[:, None], axis=0)
                for indicator, size in zip(self.indicators, self.sizes, strict=True)
            ]
        )
        forms = raw @ self.combinations.T
        # Truncated at 0 one by one: re-solving the others (non-negative least squares) would pull
        # the interaction and residual estimates down whenever an absent effect comes out negative.
        return np.maximum(forms @ self.inverse.T, 0.0), forms

    def coefficients(self, weights: np.ndarray) -> np.ndarray:
        """Per kept effect, the variance of ``weights · y`` per unit of its variance."""
        return np.array([float(np.sum(effect.weight_sums(weights) ** 2)) for effect in self.effects])


class _Projector:
    """The residual of least squares on several factors (each an _Effect covering every answer),
    for a batch of vectors at once. The factor with the most levels (the sources) is absorbed by
    its level means; the others are solved for through the pseudo-inverse of their Schur
    complement, a (small levels × small levels) matrix: exact, and never a dense matrix over
    the sources or the answers."""

    def __init__(self, factors: list[_Effect]):
        big = max(range(len(factors)), key=lambda i: factors[i].n_levels)
        absorbed = factors[big].indicator().tocsc()
        counts = np.asarray(absorbed.sum(axis=0)).ravel()
        self.absorbed_sizes = np.maximum(counts, 1.0)[:, None]
        # The absorbed factor's level sums by segments of the answers sorted by level.
        self.absorbed = absorbed
        self.absorbed_codes = factors[big].codes
        self.order = np.argsort(self.absorbed_codes, kind="stable")
        ordered = self.absorbed_codes[self.order]
        self.starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if ordered.size else ordered
        self.present = ordered[self.starts]
        rest = [factors[i].indicator() for i in range(len(factors)) if i != big]
        self.small = sparse.hstack(rest).tocsr() if rest else None
        absorbed_rank = int(np.count_nonzero(counts))
        if self.small is None:
            self.rank, self.inverse = absorbed_rank, None
            return
        # Schur complement Aᵀ M_B A, with M_B the removal of the absorbed factor's level means.
        # The cross counts (small levels × absorbed levels) stay sparse: they give the absorbed
        # level sums of any combination of the small factors.
        self.cross = sparse.csr_matrix(self.small.T @ absorbed)
        cross = self.cross.toarray()
        schur = (self.small.T @ self.small).toarray() - (cross / self.absorbed_sizes.T) @ cross.T
        values, vectors = np.linalg.eigh(schur)
        keep = values > max(float(values.max()), 1.0) * 1e-10
        self.rank = absorbed_rank + int(np.count_nonzero(keep))
        self.inverse = (vectors[:, keep] / values[keep]) @ vectors[:, keep].T

    def indicator_share(self, effect: _Effect) -> float:
        """``||(I − H) Z||²_F`` for the 0/1 indicator Z of ``effect``, exactly and without a
        dense matrix over the answers: with M the removal of the absorbed factor's level means,
        ``(I − H) = M − M S (Sᵀ M S)⁺ Sᵀ M``, so the share is ``Σ ||M z_l||²`` less
        ``trace((Sᵀ M S)⁺ WᵀW)`` where row l of W is ``Sᵀ M z_l = Sᵀ z_l − C D⁻¹ Bᵀ z_l`` (C the
        cross counts, D the absorbed level sizes, B the absorbed indicator). Every piece is a
        cross-count table of the effect's levels with the fit's factors."""
        indicator = effect.indicator().tocsc()
        inverse_sizes = 1.0 / self.absorbed_sizes.ravel()
        by_absorbed = sparse.csr_matrix(indicator.T @ self.absorbed)  # effect levels × absorbed levels
        share = float(indicator.sum()) - float((by_absorbed.multiply(by_absorbed) @ inverse_sizes).sum())
        if self.small is None or self.inverse is None:
            return share
        mixed = np.asarray((indicator.T @ self.small).todense()) - np.asarray(
            by_absorbed @ sparse.csr_matrix(self.cross.T.multiply(inverse_sizes[:, None])).todense()
        )
        return share - float(np.sum(self.inverse * (mixed.T @ mixed)))

    def residual(self, columns: np.ndarray) -> np.ndarray:
        """(answers × k) → the residuals of each column: ``M x − M S β`` with M the removal of
        the absorbed factor's level means, S the small factors' indicators and
        ``β = (Sᵀ M S)⁺ Sᵀ M x``. ``Sᵀ M x = Sᵀ x − C mean(x)`` and the level means of ``S β``
        are ``Cᵀ β / sizes`` (C the cross counts): one pass of level sums over the answers."""
        # C order: rows are gathered by level.
        x = np.ascontiguousarray(np.asarray(columns, dtype=np.float64))
        if x.shape[0] == 0:
            return x.copy()
        sums = np.zeros((self.absorbed_sizes.shape[0], x.shape[1]))
        sums[self.present] = np.add.reduceat(x[self.order], self.starts, axis=0)
        means = sums / self.absorbed_sizes
        if self.small is None:
            demeaned: np.ndarray = x - means[self.absorbed_codes]
            return demeaned
        beta = self.inverse @ (np.asarray(self.small.T @ x) - np.asarray(self.cross @ means))
        means -= np.asarray(self.cross.T @ beta) / self.absorbed_sizes
        residual: np.ndarray = x - np.asarray(self.small @ beta) - means[self.absorbed_codes]
        return residual


# A form's term: the residual SS of a fit (_Projector) or an effect's between-levels SS (_Effect).
_Term = _Projector | _Effect


class _DifferenceModel(_ComponentModel):
    """The components of two systems' answers — participant, source, participant × system,
    source × system, residual — from sums of squares of least-squares fits with the effects as
    fixed blocks: between participants and between sources (raw, for the unbalanced designs
    where their weights do not cancel), each interaction adjusted for the other effects (the
    residual SS of the fit without it less that of the full fit), and the full fit's residual.
    Adjusting is what makes the interaction's and the residual's estimates efficient in a Latin
    square, where a participant sees each system on different sources. An interaction the
    design cannot separate from the others (the source × system one when each source has one
    answer per system) is left out, its share staying in the residual. Where sources alias the
    participant × system interaction (a 4 × 4 Latin square: a participant's sources of one system
    are another's of the other), the raw SS of the participant × system cells within
    participants is used instead, its source share separated through the between-sources SS."""

    def __init__(
        self,
        rows: np.ndarray,
        n_rows: int,
        columns: np.ndarray,
        n_columns: int,
        groups: np.ndarray,
        *,
        with_column_interaction: bool = True,
    ):
        n = rows.size
        self.groups = groups
        self.group_counts = np.bincount(groups, minlength=2).astype(np.float64)
        row, column = _Effect("row", rows, n_rows), _Effect("column", columns, n_columns)
        interaction = _Effect("interaction", *_compact(rows * 2 + groups))
        column_interaction = _Effect("column_interaction", *_compact(columns * 2 + groups))
        residual = _Effect("residual", np.arange(n), n)
        system = _Effect("system", groups, 2)
        self.effects = [row, column, interaction, column_interaction, residual]
        raw = [
            [_expected_form(effect, form, groups, self.group_counts) for effect in self.effects]
            for form in (row, column)
        ]
        without_columns = _Projector([interaction, column])
        full = _Projector([interaction, column_interaction])
        columns_identified = with_column_interaction and full.rank > without_columns.rank
        if not columns_identified:
            full = without_columns
        base = _Projector([row, column_interaction] if columns_identified else [row, system, column])
        self.fits: list[tuple[float, _Projector]] = []  # each form: Σ sign · residual SS of a fit
        forms: list[Sequence[tuple[float, _Term]]] = []
        expected: list[list[float]] = []
        df: list[int] = []
        if full.rank > base.rank:
            share = base.indicator_share(interaction)
            forms.append([(1.0, base), (-1.0, full)])
            expected.append([0.0, 0.0, share, 0.0, float(full.rank - base.rank)])
            df.append(full.rank - base.rank)
            kept = [0, 1, 2]
        else:
            row_cells = [_Effect(f"row_{g}", np.where(groups == g, rows, -1), n_rows) for g in (0, 1)]
            cells = [(1.0, row_cells[0]), (1.0, row_cells[1]), (-1.0, row)]
            within = [
                sum(sign * _expected_form(e, f, groups, self.group_counts) for sign, f in cells)
                for e in self.effects
            ]
            levels = [int(np.count_nonzero(f.weight_sums(np.ones(n)))) for _, f in cells]
            interaction_df = levels[0] + levels[1] - levels[2] - 1
            kept = [0, 1]
            if interaction_df > 0 and within[2] > 1e-9:
                forms.append(cells)
                expected.append(within)
                df.append(interaction_df)
                kept.append(2)
        if columns_identified:
            middle = without_columns  # the fit without the source × system term, built above
            forms.append([(1.0, middle), (-1.0, full)])
            expected.append(
                [0.0, 0.0, 0.0, middle.indicator_share(column_interaction), float(full.rank - middle.rank)]
            )
            df.append(full.rank - middle.rank)
            kept.append(3)
        forms.append([(1.0, full)])
        expected.append([0.0, 0.0, 0.0, 0.0, float(n - full.rank)])
        df.append(n - full.rank)
        kept.append(4)
        self.kept = kept
        self.forms = forms
        self.row, self.column = row, column
        self.matrix = np.array(raw + expected)[:, kept]
        self.inverse = np.linalg.pinv(self.matrix)
        self.df = np.maximum(np.array([n_rows - 1, n_columns - 1, *df], dtype=np.float64), 1.0)

    def fit(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        y = values.T  # answers × batch
        means = np.stack([y[self.groups == g].mean(axis=0) for g in (0, 1)])
        centred = y - means[self.groups]
        cache: dict[int, np.ndarray] = {}

        def ss(term: _Term) -> np.ndarray:
            if isinstance(term, _Projector):
                if id(term) not in cache:
                    cache[id(term)] = np.sum(term.residual(y) ** 2, axis=0)
                return cache[id(term)]
            return _between_ss(term, centred)

        columns = [_between_ss(self.row, centred), _between_ss(self.column, centred)]
        # np.asarray: sum() types as ``ndarray | Literal[0]``; every form has a term.
        columns += [np.asarray(sum(sign * ss(term) for sign, term in form)) for form in self.forms]
        forms = np.column_stack(columns)
        return np.maximum(forms @ self.inverse.T, 0.0), forms

    def coefficients(self, weights: np.ndarray) -> np.ndarray:
        return np.array([float(np.sum(self.effects[i].weight_sums(weights) ** 2)) for i in self.kept])

    def column_interaction_p(self, forms: np.ndarray) -> np.ndarray | None:
        """The p value of the source × system interaction's F test (its adjusted mean square
        over the residual's), per batch row; None when the model has no such term."""
        if 3 not in self.kept:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (forms[:, -2] / self.df[-2]) / (forms[:, -1] / self.df[-1])
        p: np.ndarray = stats.f.sf(np.nan_to_num(ratio, nan=0.0), self.df[-2], self.df[-1])
        return p


def _difference_variance(
    rows: np.ndarray,
    n_rows: int,
    columns: np.ndarray,
    n_columns: int,
    groups: np.ndarray,
    weights: np.ndarray,
    values: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(variance, df)`` of ``values @ weights`` under the difference model. The source × system
    interaction is kept only where its F test gives p < POOLING_P and otherwise pooled into the
    residual ("sometimes pool", Bozivich, Bancroft & Hartley 1956): estimated from two answers per
    source and system it costs so many degrees of freedom that, when it is absent, the interval
    over-covers (99 % at 8 participants × 40 sources), yet it must be there when it is present
    (proportions near 0 and 1 make it large: 91 % coverage without it at 24 × 40)."""
    model = _difference_model(rows, n_rows, columns, n_columns, groups)
    components, forms = model.fit(values)
    variance, df = model.variance(weights, components, forms)
    p = model.column_interaction_p(forms)
    if p is None:
        return variance, df
    pool = p >= POOLING_P
    if pool.any():
        reduced = _difference_model(rows, n_rows, columns, n_columns, groups, with_column_interaction=False)
        pooled_variance, pooled_df = reduced.variance(weights, *reduced.fit(values[pool]))
        variance, df = variance.copy(), df.copy()
        variance[pool], df[pool] = pooled_variance, pooled_df
    return variance, df


def _between_ss(effect: _Effect, centred: np.ndarray) -> np.ndarray:
    """Σ over the effect's levels of (sum of the centred values)² / answers, per batch column."""
    sizes = np.maximum(np.bincount(effect.codes[effect.codes >= 0], minlength=effect.n_levels), 1)
    ss: np.ndarray = np.sum(np.asarray(effect.indicator().T @ centred) ** 2 / sizes[:, None], axis=0)
    return ss


# --- helpers ------------------------------------------------------------------------------------


def _codes_and_labels(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Hashing, not sorting: participant and source labels are strings, which numpy sorts slowly.
    codes, uniques = pd.factorize(np.asarray(labels).ravel(), sort=True)
    return codes.astype(np.int64), np.asarray(uniques)


def _codes(labels: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniques = _codes_and_labels(labels)
    return codes, uniques.size


def _clean(
    values: ArrayLike, rows: ArrayLike, columns: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = np.asarray(values, dtype=np.float64).ravel()
    r = np.asarray(rows).ravel()
    c = np.asarray(columns).ravel()
    if not (y.size == r.size == c.size):
        raise ValueError("values, rows and columns must have the same length")
    keep = ~np.isnan(y)
    return y[keep], r[keep], c[keep]


def _label(label: Any) -> Any:
    return label.item() if hasattr(label, "item") else label


# A model depends only on the design (who answered what), not on the values: the measures of a
# study share designs, and group_components refits what crossed_group_intervals did. The last
# few models are kept, keyed by a digest of their design's codes.
# A model holds a few arrays over its answers: each kind's cache is bounded by their total number
# (one per kind, so that the systems' models do not evict the pairs' between the intervals and
# group_components: 6 pairs of 200 000 answers at 20 000 sources × 20 laypeople).
_MODEL_CACHES: dict[str, OrderedDict[tuple[Hashable, ...], tuple[Any, int]]] = {
    "single": OrderedDict(),
    "difference": OrderedDict(),
}
_MODEL_CACHE_ANSWERS = {"single": 500_000, "difference": 1_500_000}


def _design_key(kind: str, arrays: Sequence[np.ndarray], *extra: Hashable) -> tuple[Hashable, ...]:
    digest = hashlib.blake2b(digest_size=20)
    for array in arrays:
        codes = np.ascontiguousarray(array, dtype=np.int64)
        digest.update(codes.size.to_bytes(8, "little"))
        digest.update(codes.tobytes())
    return (kind, digest.hexdigest(), *extra)


def _cached(key: tuple[Hashable, ...], answers: int, build: Callable[[], Any]) -> Any:
    kind = str(key[0])
    cache, budget = _MODEL_CACHES[kind], _MODEL_CACHE_ANSWERS[kind]
    entry = cache.get(key)
    if entry is not None:
        cache.move_to_end(key)
        return entry[0]
    model = build()
    if answers <= budget:
        cache[key] = (model, answers)
        while sum(size for _, size in cache.values()) > budget:
            cache.popitem(last=False)
    return model


def _difference_model(
    rows: np.ndarray,
    n_rows: int,
    columns: np.ndarray,
    n_columns: int,
    groups: np.ndarray,
    *,
    with_column_interaction: bool = True,
) -> _DifferenceModel:
    if not with_column_interaction:
        # Needed only where the source × system term is pooled, once per measure: not kept, so
        # that the full models (which group_components refits) stay within the cache's budget.
        return _DifferenceModel(rows, n_rows, columns, n_columns, groups, with_column_interaction=False)
    key = _design_key("difference", (rows, columns, groups), n_rows, n_columns)
    model: _DifferenceModel = _cached(
        key, rows.size, lambda: _DifferenceModel(rows, n_rows, columns, n_columns, groups)
    )
    return model


def _single_model(rows: np.ndarray, n_rows: int, columns: np.ndarray, n_columns: int) -> _MomentModel:
    key = _design_key("single", (rows, columns), n_rows, n_columns)
    model: _MomentModel = _cached(
        key, rows.size, lambda: _build_single_model(rows, n_rows, columns, n_columns)
    )
    return model


def _build_single_model(rows: np.ndarray, n_rows: int, columns: np.ndarray, n_columns: int) -> _MomentModel:
    n = rows.size
    effects = [
        _Effect("row", rows, n_rows),
        _Effect("column", columns, n_columns),
        _Effect("residual", np.arange(n), n),
    ]

    def orthogonal(kept: list[str], levels: dict[str, int]) -> tuple[list[dict[str, float]], list[int]]:
        # Two-way ANOVA: between participants, between sources, and the rest.
        combinations: list[dict[str, float]] = []
        df: list[int] = []
        residual, residual_df = {"residual": 1.0}, levels["residual"] - 1
        for name in ("row", "column"):
            if name in kept:
                combinations.append({name: 1.0})
                df.append(levels[name] - 1)
                residual[name] = -1.0
                residual_df -= levels[name] - 1
        return [*combinations, residual], [*df, residual_df]

    cells = {effect.name: effect for effect in effects}
    return _MomentModel(np.zeros(n, dtype=np.int64), 1, effects, cells, ["column", "row"], orthogonal)


def _compact(codes: np.ndarray) -> tuple[np.ndarray, int]:
    uniques, compact = np.unique(codes, return_inverse=True)
    return compact.astype(np.int64), uniques.size


def _t_bounds(
    estimate: np.ndarray,
    variance: np.ndarray,
    df: np.ndarray,
    confidence: float,
    bounds: tuple[float, float] | None,
) -> tuple[np.ndarray, np.ndarray]:
    quantile = stats.t.ppf(0.5 + confidence / 2, df)
    half = quantile * np.sqrt(np.maximum(variance, 0.0))
    low, high = estimate - half, estimate + half
    if bounds is not None:
        span = bounds[1] - bounds[0]
        low, high = np.maximum(low, -span), np.minimum(high, span)
    return low, high


def _bounded_interval(
    estimate: np.ndarray,
    variance: np.ndarray,
    df: np.ndarray,
    n: int,
    confidence: float,
    bounds: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of a mean bounded in ``bounds`` (module docstring): Wilson's score interval
    on the rescaled mean with the design's effective sample size and the t quantile; for a
    proportion with fewer than ``RARE_EVENTS`` effective events or non-events, Korn & Graubard's
    (1998) Clopper–Pearson interval with the effective size scaled by (t_(n−1) / t_df)²."""
    span = bounds[1] - bounds[0]
    m = np.clip((estimate - bounds[0]) / span, 0.0, 1.0)
    scaled = np.maximum(variance, 0.0) / span**2
    inside = (m > 0) & (m < 1) & (scaled > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = np.where(inside, m * (1 - m) / scaled, float(n))
    quantile = stats.t.ppf(0.5 + confidence / 2, df)
    z2 = quantile**2
    centre = (m + z2 / (2 * effective)) / (1 + z2 / effective)
    half = quantile / (1 + z2 / effective) * np.sqrt(m * (1 - m) / effective + z2 / (4 * effective**2))
    low, high = np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
    if bounds == (0.0, 1.0):
        tail = (1 - confidence) / 2
        adjusted = effective * (stats.t.ppf(1 - tail, max(n - 1, 1)) / quantile) ** 2
        events = m * adjusted
        rare = np.minimum(events, adjusted - events) < RARE_EVENTS
        with np.errstate(divide="ignore", invalid="ignore"):
            exact_low = np.where(events > 0, stats.beta.ppf(tail, events, adjusted - events + 1), 0.0)
            exact_high = np.where(
                events < adjusted, stats.beta.ppf(1 - tail, events + 1, adjusted - events), 1.0
            )
        low = np.where(rare, np.nan_to_num(exact_low, nan=0.0), low)
        high = np.where(rare, np.nan_to_num(exact_high, nan=1.0), high)
    return bounds[0] + span * low, bounds[0] + span * high


def _rate_interval(
    estimate: np.ndarray,
    variance: np.ndarray,
    df: np.ndarray,
    exposure: float,
    confidence: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of a mean count or rate (values ≥ 0; module docstring): the Poisson score
    interval (the Poisson analogue of Wilson's) with the design's effective exposure
    ``m / SE²`` (the quasi-Poisson reading of the crossed variance: its overdispersion and the
    raters' and sources' shares are all in SE) and the t quantile. Far from 0 it is the t
    interval; near 0 it is skewed upwards and never below 0. With no variation (every answer the
    same count, e.g. no span at all) the exposure is the answers' own (``exposure``: the number
    of answers, or their words / 100 for a rate per 100 words), so a category nobody marked
    gets [0, q² / exposure] instead of [0, 0]."""
    m = np.maximum(estimate, 0.0)
    v = np.maximum(variance, 0.0)
    varied = (m > 0) & (v > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = np.where(varied, m / np.where(varied, v, 1.0), float(exposure))
    quantile = stats.t.ppf(0.5 + confidence / 2, df)
    quantile = np.where(np.isfinite(quantile), quantile, stats.norm.ppf(0.5 + confidence / 2))
    q2 = quantile**2
    events = m * effective
    root = quantile * np.sqrt(events + q2 / 4)
    low = np.maximum((events + q2 / 2 - root) / effective, 0.0)
    high = (events + q2 / 2 + root) / effective
    return np.minimum(low, m), np.maximum(high, m)


def bounded_mean_interval(
    estimate: float,
    variance: float,
    df: float,
    n: int,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> tuple[float, float]:
    """The interval of one mean bounded in ``bounds`` from its estimate, variance and df (however
    they were estimated; n: the answers behind it): the Wilson / Korn–Graubard interval the
    crossed means use (``_bounded_interval``). The pairwise win rates use it."""
    low, high = _bounded_interval(
        np.array([estimate]), np.array([variance]), np.array([df]), n, confidence, bounds
    )
    return float(low[0]), float(high[0])


def _shape(
    weights: np.ndarray, rows: np.ndarray, n_rows: int, columns: np.ndarray, n_columns: int
) -> tuple[int, int, int]:
    used = weights != 0
    return (
        int(np.count_nonzero(used)),
        int(np.count_nonzero(np.bincount(rows[used], minlength=n_rows))),
        int(np.count_nonzero(np.bincount(columns[used], minlength=n_columns))),
    )


@dataclass(frozen=True)
class _Estimates:
    """One estimator over a batch: arrays of estimates, variances, df and interval ends (the
    last four None when there are too few participants or sources)."""

    estimate: np.ndarray
    variance: np.ndarray | None
    df: np.ndarray | None
    low: np.ndarray | None
    high: np.ndarray | None
    shape: tuple[int, int, int]
    method: str

    def records(self, support: Support = REAL) -> list[CrossedInterval]:
        """One CrossedInterval per row of the batch, its ends passed through ``support.bound``."""
        n, n_rows, n_columns = self.shape
        if self.variance is None:
            return [
                CrossedInterval(
                    float(e), None, None, None, None, n, n_rows, n_columns, self.method, TOO_FEW, support
                )
                for e in self.estimate
            ]
        assert self.low is not None and self.high is not None and self.df is not None  # set with variance
        out = []
        for e, lo, hi, v, d in zip(self.estimate, self.low, self.high, self.variance, self.df, strict=True):
            low, high = support.bound(float(e), float(lo), float(hi))
            out.append(
                CrossedInterval(
                    float(e),
                    low,
                    high,
                    math.sqrt(max(float(v), 0.0)),
                    float(d),
                    n,
                    n_rows,
                    n_columns,
                    self.method,
                    None,
                    support,
                )
            )
        return out


def _mover(
    difference: np.ndarray,
    variance: np.ndarray,
    df: np.ndarray,
    first: _Estimates,
    second: _Estimates,
    confidence: float,
    span: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Zou & Donner's (2008) MOVER interval of mean(first) − mean(second) from the two means'
    bounded intervals, each half-width brought to the difference's t quantile, with the
    correlation of the two means that the difference's variance implies: the t interval far from
    the bounds, the asymmetry of the Wilson intervals near them (Newcombe's hybrid score interval
    for two proportions, in the crossed design)."""
    quantile = stats.t.ppf(0.5 + confidence / 2, df)

    def halves(estimates: _Estimates) -> tuple[np.ndarray, np.ndarray]:
        scale = quantile / stats.t.ppf(0.5 + confidence / 2, estimates.df)
        return (estimates.estimate - estimates.low) * scale, (estimates.high - estimates.estimate) * scale

    down_1, up_1 = halves(first)
    down_2, up_2 = halves(second)
    assert first.variance is not None and second.variance is not None  # the caller's condition
    both = first.variance * second.variance
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(both > 0, (first.variance + second.variance - variance) / (2 * np.sqrt(both)), 0.0)
    rho = np.clip(rho, -1.0, 1.0)
    low = difference - np.sqrt(np.maximum(down_1**2 + up_2**2 - 2 * rho * down_1 * up_2, 0.0))
    high = difference + np.sqrt(np.maximum(up_1**2 + down_2**2 - 2 * rho * up_1 * down_2, 0.0))
    return np.maximum(low, -span), np.minimum(high, span)


# --- public API ---------------------------------------------------------------------------------


def variance_components(values: ArrayLike, rows: ArrayLike, columns: ArrayLike) -> Components:
    """Method-of-moments estimates of the row, column and residual variances of crossed data.

    ``values`` may contain NaN (dropped with their labels); ``rows``/``columns`` are any hashable
    labels. In a complete table these are the two-way ANOVA estimators. When the design cannot
    tell a component apart (one row, one column, or every answer in its own row), it is 0 and
    its share stays in the residual.
    """
    y, r, c = _clean(values, rows, columns)
    rows_, n_rows = _codes(r)
    columns_, n_columns = _codes(c)
    n = y.size
    if n < 2:
        return Components(0.0, 0.0, 0.0, n, n_rows, n_columns, 1)
    model = _single_model(rows_, n_rows, columns_, n_columns)
    estimates, _ = model.fit(y[None, :])
    named = {effect.name: float(v) for effect, v in zip(model.effects, estimates[0], strict=True)}
    residual_df = n - 1
    if "row" in named:
        residual_df -= n_rows - 1
    if "column" in named:
        residual_df -= n_columns - 1
    return Components(
        named.get("row", 0.0),
        named.get("column", 0.0),
        named["residual"],
        n,
        n_rows,
        n_columns,
        max(residual_df, 1),
    )


def pair_components(
    values: ArrayLike, rows: ArrayLike, columns: ArrayLike, groups: ArrayLike
) -> PairComponents:
    """The difference model's components (module docstring) of two groups' answers."""
    y = np.asarray(values, dtype=np.float64).ravel()
    keep = ~np.isnan(y)
    group_codes, labels = _codes_and_labels(np.asarray(groups).ravel()[keep])
    if labels.size != 2:
        raise ValueError("pair_components needs answers of exactly two groups")
    rows_, n_rows = _codes(np.asarray(rows).ravel()[keep])
    columns_, n_columns = _codes(np.asarray(columns).ravel()[keep])
    model = _difference_model(rows_, n_rows, columns_, n_columns, group_codes)
    estimates, _ = model.fit(y[keep][None, :])
    named = {model.effects[i].name: float(v) for i, v in zip(model.kept, estimates[0], strict=True)}
    return PairComponents(
        named.get("row", 0.0),
        named.get("column", 0.0),
        named.get("interaction"),
        named.get("column_interaction"),
        named["residual"],
    )


def group_components(
    values: ArrayLike, rows: ArrayLike, columns: ArrayLike, groups: ArrayLike
) -> dict[str, Any]:
    """The variance components behind ``crossed_group_intervals``, for the Methods and the
    planner: ``{"systems": {g: Components of g's own answers}, "pairs": {(a, b): PairComponents}}``,
    each only where its group (pair) has at least MIN_PARTICIPANTS participants and MIN_SOURCES
    sources."""
    y = np.asarray(values, dtype=np.float64).ravel()
    keep = ~np.isnan(y)
    g = np.asarray(groups).ravel()[keep]
    r = np.asarray(rows).ravel()[keep]
    c = np.asarray(columns).ravel()[keep]
    y = y[keep]
    labels = sorted(pd.unique(g).tolist())

    def enough(mask: np.ndarray) -> bool:
        return bool(pd.unique(r[mask]).size >= MIN_PARTICIPANTS and pd.unique(c[mask]).size >= MIN_SOURCES)

    systems = {
        label: variance_components(y[g == label], r[g == label], c[g == label])
        for label in labels
        if enough(g == label)
    }
    pairs: dict[tuple[Any, Any], PairComponents] = {}
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            mask = (g == a) | (g == b)
            if enough(mask):
                # a's answers, then b's: the order of crossed_group_intervals, whose model is reused
                index = np.concatenate([np.flatnonzero(g == a), np.flatnonzero(g == b)])
                pairs[(a, b)] = pair_components(y[index], r[index], c[index], g[index])
    return {"systems": systems, "pairs": pairs}


def group_intervals_batch(
    values: np.ndarray,
    rows: np.ndarray,
    columns: np.ndarray,
    groups: np.ndarray,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
    differences: bool = True,
    rates: bool = False,
    exposure: np.ndarray | None = None,
) -> tuple[dict[Any, list[CrossedInterval]], dict[tuple[Any, Any], list[CrossedInterval]]]:
    """``crossed_group_intervals`` for a batch of value vectors on one design: ``values`` is
    (batch × answers) without NaN, rows/columns/groups integer codes (answers). Returns
    ``(means, differences)`` whose entries are lists of CrossedInterval, one per row of the
    batch. The coverage tests run thousands of simulated studies through this. ``differences=False``
    skips the differences (returned empty) where only the means are wanted. ``rates=True``: the
    values are counts or rates (≥ 0, unbounded above; ``bounds`` must be None), whose means get
    the Poisson score interval (``_rate_interval``); ``exposure`` (answers) is what each answer's
    count is per (default 1: spans per text; words / 100 for spans per 100 words), used only where
    the answers do not vary."""
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    if rates and bounds is not None:
        raise ValueError("a count or rate is bounded below by 0 only: give rates or bounds, not both")
    group_codes, labels = _codes_and_labels(groups)
    members = [np.flatnonzero(group_codes == k) for k in range(labels.size)]
    mean_method = METHOD_RATE if rates else METHOD_T if bounds is None else METHOD_WILSON
    difference_method = METHOD_T if bounds is None else METHOD_MOVER
    mean_support = support_of(bounds, non_negative=rates)
    pair_support = difference_support(bounds)
    exposures = np.ones(values.shape[1]) if exposure is None else np.asarray(exposure, dtype=np.float64)
    estimates: list[_Estimates] = []
    for index in members:
        r, n_r = _compact(np.asarray(rows)[index])
        c, n_c = _compact(np.asarray(columns)[index])
        y = values[:, index]
        estimate = y.mean(axis=1)
        weights = np.full(index.size, 1.0 / index.size)
        shape = _shape(weights, r, n_r, c, n_c)
        if shape[1] < MIN_PARTICIPANTS or shape[2] < MIN_SOURCES:
            estimates.append(_Estimates(estimate, None, None, None, None, shape, mean_method))
            continue
        model = _single_model(r, n_r, c, n_c)
        variance, df = model.variance(weights, *model.fit(y))
        if rates:
            total = float(exposures[index].sum())
            low, high = _rate_interval(estimate, variance, df, total, confidence)
        elif bounds is None:
            low, high = _t_bounds(estimate, variance, df, confidence, None)
        else:
            low, high = _bounded_interval(estimate, variance, df, index.size, confidence, bounds)
        estimates.append(_Estimates(estimate, variance, df, low, high, shape, mean_method))
    means = {_label(label): estimates[k].records(mean_support) for k, label in enumerate(labels)}
    pair_intervals: dict[tuple[Any, Any], list[CrossedInterval]] = {}
    for i in range(labels.size if differences else 0):
        for j in range(i + 1, labels.size):
            index = np.concatenate([members[i], members[j]])
            pair_groups = np.concatenate(
                [np.zeros(members[i].size, np.int64), np.ones(members[j].size, np.int64)]
            )
            r, n_r = _compact(np.asarray(rows)[index])
            c, n_c = _compact(np.asarray(columns)[index])
            y = values[:, index]
            weights = np.where(pair_groups == 0, 1.0 / members[i].size, -1.0 / members[j].size)
            estimate = y @ weights
            shape = _shape(weights, r, n_r, c, n_c)
            key = (_label(labels[i]), _label(labels[j]))
            if shape[1] < MIN_PARTICIPANTS or shape[2] < MIN_SOURCES:
                pair_intervals[key] = _Estimates(
                    estimate, None, None, None, None, shape, difference_method
                ).records(pair_support)
                continue
            variance, df = _difference_variance(r, n_r, c, n_c, pair_groups, weights, y)
            both = estimates[i].variance is not None and estimates[j].variance is not None
            if (bounds is not None or rates) and both:
                # Bounded means, or counts: the MOVER interval from the two means' own intervals
                # (Wilson's, or the Poisson score ones: a difference of two counts nobody gave is
                # not the zero-width [0, 0] of a t interval with no variance).
                span = bounds[1] - bounds[0] if bounds is not None else math.inf
                low, high = _mover(estimate, variance, df, estimates[i], estimates[j], confidence, span)
                method = METHOD_MOVER_RATE if rates else METHOD_MOVER
            else:
                low, high = _t_bounds(estimate, variance, df, confidence, bounds)
                method = METHOD_T
            pair_intervals[key] = _Estimates(estimate, variance, df, low, high, shape, method).records(
                pair_support
            )
    return means, pair_intervals


def crossed_mean_ci(
    values: Sequence[float] | np.ndarray,
    rows: ArrayLike,
    columns: ArrayLike,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
    rates: bool = False,
) -> CrossedInterval:
    """The mean of ``values`` (NaN dropped) with its interval under the crossed model; ``bounds``:
    the range the values (hence the mean) cannot leave, e.g. (0, 1) for a proportion; ``rates``:
    the values are counts or rates (≥ 0). With no value: no estimate, TOO_FEW, the same support."""
    means, _ = crossed_group_intervals(
        values, rows, columns, np.zeros(len(values)), confidence=confidence, bounds=bounds, rates=rates
    )
    empty = CrossedInterval(
        None, None, None, None, None, 0, 0, 0, reason=TOO_FEW, support=support_of(bounds, non_negative=rates)
    )
    return means.get(0.0, empty)


def crossed_group_intervals(
    values: ArrayLike,
    rows: ArrayLike,
    columns: ArrayLike,
    groups: ArrayLike,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
    differences: bool = True,
    rates: bool = False,
    exposure: ArrayLike | None = None,
) -> tuple[dict[Any, CrossedInterval], dict[tuple[Any, Any], CrossedInterval]]:
    """``(means, differences)`` of answers in fixed groups (systems) that share participants and
    sources: ``means[g]`` is group g's mean and ``differences[(a, b)]`` mean(a) − mean(b) for
    every pair of groups in sorted order, each with its interval (module docstring: a mean uses
    its group's own components, a difference the two groups' answers with the participant ×
    group interaction and a residual variance per group). ``differences=False``: the means only
    (the differences come back empty). ``rates`` and ``exposure``: group_intervals_batch."""
    y = np.asarray(values, dtype=np.float64).ravel()
    g = np.asarray(groups).ravel()
    r = np.asarray(rows).ravel()
    c = np.asarray(columns).ravel()
    e = np.ones(y.size) if exposure is None else np.asarray(exposure, dtype=np.float64).ravel()
    if not (y.size == g.size == r.size == c.size == e.size):
        raise ValueError("values, rows, columns, groups (and exposure) must have the same length")
    keep = ~np.isnan(y)
    y, g, r, c, e = y[keep], g[keep], r[keep], c[keep], e[keep]
    if y.size == 0:
        return {}, {}
    means, pair_intervals = group_intervals_batch(
        y[None, :],
        _codes(r)[0],
        _codes(c)[0],
        g,
        confidence=confidence,
        bounds=bounds,
        differences=differences,
        rates=rates,
        exposure=e,
    )
    return {k: v[0] for k, v in means.items()}, {k: v[0] for k, v in pair_intervals.items()}


def crossed_difference_ci(
    values_a: ArrayLike,
    rows_a: ArrayLike,
    columns_a: ArrayLike,
    values_b: ArrayLike,
    rows_b: ArrayLike,
    columns_b: ArrayLike,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
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
        bounds=bounds,
    )
    empty = CrossedInterval(
        None,
        None,
        None,
        None,
        None,
        int(values_a.size + values_b.size),
        0,
        0,
        reason=TOO_FEW,
        support=difference_support(bounds),
    )
    return differences.get((0.0, 1.0), empty)


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def interval_record(ci: CrossedInterval) -> dict[str, Any]:
    """A mean's interval as the analysis document holds it (JSON-ready: None where not finite)."""
    return {
        "mean": _finite(ci.estimate),
        "low": _finite(ci.low),
        "high": _finite(ci.high),
        "n": ci.n,
        "participants": ci.n_rows,
        "sources": ci.n_columns,
        "method": ci.method,
        "reason": ci.reason,
        "support": ci.support.record(),
    }


def difference_records(
    groups: Sequence[Any],
    differences: dict[tuple[Any, Any], CrossedInterval],
    bounds: tuple[float, float] | None = None,
) -> list[dict[str, Any]]:
    """Every pair of `groups` (in order; group i has the code float(i) in `differences`, as
    crossed_group_intervals returns them) as the analysis document holds a difference: a − b with
    its interval, or no figure and TOO_FEW where the pair had too few answers; ``bounds``: those
    of the means, for the support of a pair without answers."""
    records = []
    for i, a in enumerate(groups):
        for j in range(i + 1, len(groups)):
            ci = differences.get((float(i), float(j)))
            records.append(
                {
                    "system_a": a,
                    "system_b": groups[j],
                    "difference": _finite(ci.estimate) if ci else None,
                    "low": _finite(ci.low) if ci else None,
                    "high": _finite(ci.high) if ci else None,
                    "n": ci.n if ci else 0,
                    "method": ci.method if ci else None,
                    "reason": ci.reason if ci else TOO_FEW,
                    "support": (ci.support if ci else difference_support(bounds)).record(),
                }
            )
    return records
