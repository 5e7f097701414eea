"""Power of radlay's analysis for a follow-up study, by simulating the study radlay would run.

For each design (participants who complete × sources) the simulation draws `n_simulations` studies:

1. **Design** — lay outcomes: participant r holds Latin-square row r and sees the window of
   sources that `measures.latin_square.LatinSquare` gives it, one system per source, exactly as
   the survey hands them out; radiologist outcomes: every radiologist rates every system's text
   of every source. Drop-outs: with a drop-out rate d, round(N·d/(1−d)) more participants start,
   each answers a uniformly random share of its items, and holds the row of a random completer
   (radlay hands a dropped row out again, so the completers still fill the square).
2. **Answers**, from the fitted crossed model (evaluation/planning/variance.py): a latent value
   mean(system) + u(participant) + v(source) + w(participant × system) + e, with the pilot's
   participant × system interaction variance for w and each system's own residual variance for
   e (both estimated from the pilot; 0 and the pooled residual when not given), drawn on the
   outcome's scale — ordinal outcomes
   are rounded to the nearest level and clipped to the scale; binary outcomes are Bernoulli with
   probability clip(mean + u + v, 0, 1); continuous ones are clipped to their range. Rounding
   adds variance and clipping removes some, so the latent standard deviations are the fitted
   ones times one factor (`latent_scale`) that makes a simulated answer exactly as variable as
   the pilot's (checked on the 2024 release: tests/evaluation/planning/test_release_plan.py).
   One system is `effect` above the others on the **observed** scale: the latent
   shift that gives exactly that difference in expected answers, after rounding and clipping, is
   solved for analytically (`latent_means`).
3. **Analysis**, as radlay's analysis does it (evaluation/analysis/intervals.py `comparisons`): per
   source, the mean answer of each system; a Wilcoxon signed-rank test over the sources for every
   pair of systems, Holm-corrected across all pairs; the planned comparison (the shifted system
   against a baseline system) is detected when its Holm-adjusted p < alpha. The Wilcoxon test
   uses the normal approximation with the tie correction (scipy's "approx" method, which scipy
   itself uses whenever differences tie or are zero, as they do with answers on a few levels).
   Beside it, the **mixed-model** analysis: the system effects estimated with participants and
   sources as blocks (the intra-block estimator of the crossed mixed model, by alternating
   projections), a Wald test per pair, Holm-corrected.

Power is the share of simulated studies that detect the effect, with its Monte Carlo standard
error sqrt(p(1 − p)/n_simulations). Seeded: the same inputs give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, sparse, special, stats
from scipy.sparse import csgraph

from evaluation.planning.outcomes import Outcome
from measures.latin_square import LatinSquare

_MAX_FLOATS = 6_000_000  # per simulation chunk: bounds memory whatever the design


@dataclass(frozen=True)
class PowerSettings:
    outcome: Outcome
    participant_var: float
    source_var: float
    residual_var: float
    baseline: float  # expected answer of the baseline systems, observed scale
    effect: float  # difference of the shifted system to the baseline, observed scale
    n_systems: int = 2
    alpha: float = 0.05
    target: float = 0.8
    per_participant: int | None = None  # lay: sources each participant sees; None = all
    dropout: float = 0.0
    n_simulations: int = 1000
    seed: int = 0
    mixed_model: bool = True
    test: str = "wilcoxon"  # "wilcoxon" (radlay's analysis) | "t" (paired t-test, for validation)
    # A participant × system interaction: each participant's answers to one system move together
    # by a draw of this variance (a system helps some people more than others).
    interaction_var: float = 0.0
    # Residual variance of each simulated system (cycled over the systems); None: residual_var.
    residual_vars: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.n_systems < 2:
            raise ValueError("A comparison needs at least two systems.")
        if not 0 < self.alpha < 1 or not 0 < self.target < 1:
            raise ValueError("alpha and the target power must lie between 0 and 1.")
        if not 0 <= self.dropout < 1:
            raise ValueError("The drop-out rate must be at least 0 and below 1.")
        if self.n_simulations < 10:
            raise ValueError("Use at least 10 simulations per design.")
        if min(self.participant_var, self.source_var, self.residual_var, self.interaction_var) < 0:
            raise ValueError("Variance components cannot be negative.")
        if self.residual_vars is not None and (not self.residual_vars or min(self.residual_vars) < 0):
            raise ValueError("Residual variances per system must be given and cannot be negative.")
        if self.test not in ("wilcoxon", "t"):
            raise ValueError("test must be 'wilcoxon' or 't'.")


@dataclass(frozen=True)
class CellPower:
    participants: int
    sources: int
    answers: int  # answers per simulated study (completers only)
    recruited: int  # participants who start, drop-outs included
    power: float
    power_se: float
    mixed_power: float | None
    mixed_power_se: float | None
    observed_difference: float  # mean simulated difference of the two compared systems

    def meets(self, target: float) -> bool:
        return self.power >= target


@dataclass(frozen=True)
class PowerGrid:
    settings: PowerSettings
    participants: list[int]
    sources: list[int]
    cells: list[CellPower]
    latent: dict[str, float] = field(default_factory=dict)
    mixed_simulations: int | None = None

    def cell(self, participants: int, sources: int) -> CellPower:
        for cell in self.cells:
            if cell.participants == participants and cell.sources == sources:
                return cell
        raise KeyError((participants, sources))

    def smallest(self) -> CellPower | None:
        """The design meeting the target power with the fewest answers (then fewest participants)."""
        meeting = [c for c in self.cells if c.meets(self.settings.target)]
        return min(meeting, key=lambda c: (c.answers, c.participants, c.sources), default=None)

    def frontier(self) -> list[CellPower]:
        """For each number of sources, the fewest participants meeting the target."""
        best: dict[int, CellPower] = {}
        for cell in self.cells:
            if cell.meets(self.settings.target) and (
                cell.sources not in best or cell.participants < best[cell.sources].participants
            ):
                best[cell.sources] = cell
        return [best[s] for s in self.sources if s in best]

    def as_dict(self) -> dict[str, Any]:
        smallest = self.smallest()
        return {
            "settings": {
                "outcome": self.settings.outcome.key,
                "outcome_label": self.settings.outcome.label,
                "design": self.settings.outcome.design,
                "participant_var": self.settings.participant_var,
                "source_var": self.settings.source_var,
                "residual_var": self.settings.residual_var,
                "baseline": self.settings.baseline,
                "effect": self.settings.effect,
                "n_systems": self.settings.n_systems,
                "alpha": self.settings.alpha,
                "target": self.settings.target,
                "per_participant": self.settings.per_participant,
                "dropout": self.settings.dropout,
                "n_simulations": self.settings.n_simulations,
                "seed": self.settings.seed,
                "mixed_model": self.settings.mixed_model,
                "test": self.settings.test,
                "interaction_var": self.settings.interaction_var,
                "residual_vars": list(self.settings.residual_vars) if self.settings.residual_vars else None,
            },
            "latent": self.latent,
            "mixed_simulations": self.mixed_simulations,
            "participants": self.participants,
            "sources": self.sources,
            "cells": [cell.__dict__ for cell in self.cells],
            "smallest": smallest.__dict__ if smallest else None,
            "frontier": [cell.__dict__ for cell in self.frontier()],
        }


# --- the outcome's scale -----------------------------------------------------------------------


def _stop_loss(mean: float, sd: float, level: float) -> float:
    """E[max(X − level, 0)] for X ~ N(mean, sd²)."""
    if sd <= 0:
        return max(mean - level, 0.0)
    z = (mean - level) / sd
    return (mean - level) * special.ndtr(z) + sd * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _residual_vars(settings: PowerSettings) -> np.ndarray:
    """The residual variance of each simulated system."""
    if settings.residual_vars is None:
        return np.full(settings.n_systems, settings.residual_var)
    return np.resize(np.asarray(settings.residual_vars, dtype=np.float64), settings.n_systems)


def _latent_sd(settings: PowerSettings, scale: float = 1.0) -> tuple[float, float]:
    """(sd of the latent residual, sd of the latent total around a system mean), the fitted
    components multiplied by `scale` (see latent_model); with a residual variance per system,
    their mean (the answers' variance over the systems)."""
    shared = settings.participant_var + settings.source_var + settings.interaction_var
    if settings.outcome.kind == "binary":
        return 0.0, scale * math.sqrt(shared)
    residual = float(np.mean(_residual_vars(settings)))
    return scale * math.sqrt(residual), scale * math.sqrt(shared + residual)


_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(120)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def observed_moments(settings: PowerSettings, latent_mean: float, scale: float = 1.0) -> tuple[float, float]:
    """Mean and variance of one observed answer of a system whose latent mean is `latent_mean`
    (participant, source and residual variation, rounding and clipping included)."""
    outcome = settings.outcome
    _, sd = _latent_sd(settings, scale)
    if outcome.kind == "ordinal":
        levels = np.arange(outcome.low, outcome.high + 1)
        if sd <= 0:
            value = float(np.clip(np.round(latent_mean), outcome.low, outcome.high))
            return value, 0.0
        upper = special.ndtr((levels[:-1] + 0.5 - latent_mean) / sd)
        probabilities = np.diff(np.concatenate([[0.0], upper, [1.0]]))
        mean = float(np.dot(levels, probabilities))
        return mean, float(np.dot(levels**2, probabilities) - mean**2)
    # binary: E[clip(Z, 0, 1)] with Z = mean + u + v; continuous: E[clip(X, low, high)]
    mean = float(
        outcome.low + _stop_loss(latent_mean, sd, outcome.low) - _stop_loss(latent_mean, sd, outcome.high)
    )
    if outcome.kind == "binary":
        return mean, mean * (1 - mean)
    clipped = np.clip(latent_mean + sd * _NODES, outcome.low, outcome.high)
    return mean, float(np.dot(_WEIGHTS, clipped**2) - mean**2)


def expected_answer(settings: PowerSettings, latent_mean: float, scale: float = 1.0) -> float:
    """Expected observed answer of a system whose latent mean is `latent_mean`."""
    return observed_moments(settings, latent_mean, scale)[0]


def latent_mean(
    settings: PowerSettings, observed: float, name: str = "mean", scale: float | None = None
) -> float:
    """The latent mean whose expected observed answer is `observed` (at the model's scale)."""
    outcome = settings.outcome
    if not outcome.low < observed < outcome.high:
        raise ValueError(
            f"The {name} ({observed:.3g}) must lie strictly inside the scale of {outcome.label} "
            f"({outcome.low:g} to {outcome.high:g})."
        )
    scale = latent_scale(settings) if scale is None else scale
    _, sd = _latent_sd(settings, scale)
    span = (outcome.high - outcome.low) + 10 * max(sd, 1.0)
    return float(
        optimize.brentq(
            lambda m: expected_answer(settings, m, scale) - observed,
            outcome.low - span,
            outcome.high + span,
            xtol=1e-10,
        )
    )


MAX_SCALE = 50.0


def latent_scale(settings: PowerSettings) -> float:
    """The factor on the fitted standard deviations that makes simulated answers as variable as
    the pilot's: rounding to levels adds variance and clipping at the ends of the scale removes
    some (much of it near a ceiling), so the latent components are scaled until the observed
    variance of an answer at the baseline mean equals the fitted total variance. 1 for binary
    outcomes, whose variance follows from their mean."""
    if settings.outcome.kind == "binary":
        return 1.0
    target = (
        settings.participant_var
        + settings.source_var
        + settings.interaction_var
        + float(np.mean(_residual_vars(settings)))
    )
    if target <= 0:
        return 1.0

    def excess(scale: float) -> float:
        mean = latent_mean(settings, settings.baseline, "baseline mean", scale=scale)
        return observed_moments(settings, mean, scale)[1] - target

    low, high = 1e-3, MAX_SCALE
    if excess(high) < 0:  # more variance than the scale allows at this mean: as close as it gets
        return high
    if excess(low) > 0:  # rounding alone gives more variance than the pilot's
        return low
    return float(optimize.brentq(excess, low, high, xtol=1e-6))


def latent_means(settings: PowerSettings) -> tuple[float, float]:
    """Latent means (baseline, shifted) whose expected observed answers are the settings'
    baseline and baseline + effect."""
    scale = latent_scale(settings)
    return (
        latent_mean(settings, settings.baseline, "baseline mean", scale=scale),
        latent_mean(settings, settings.baseline + settings.effect, "baseline plus the effect", scale=scale),
    )


# --- one design --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Design:
    participant: np.ndarray  # (n_obs,) completers' answers
    source: np.ndarray
    system: np.ndarray
    n_participants: int
    rows_items: np.ndarray  # (n_participants, items) observation index of each completer's items


def _design(settings: PowerSettings, n_participants: int, n_sources: int) -> _Design:
    k = settings.n_systems
    if settings.outcome.design == "expert":
        p, s, j = np.meshgrid(np.arange(n_participants), np.arange(n_sources), np.arange(k), indexing="ij")
        participant, source, system = p.ravel(), s.ravel(), j.ravel()
    else:
        square = LatinSquare(n_sources=n_sources, n_systems=k, per_participant=settings.per_participant)
        pairs = np.array([square.pairs(row) for row in range(n_participants)], dtype=np.int64)
        participant = np.repeat(np.arange(n_participants), pairs.shape[1])
        source, system = pairs[:, :, 0].ravel(), pairs[:, :, 1].ravel()
    items = len(participant) // n_participants
    return _Design(
        participant,
        source,
        system,
        n_participants,
        np.arange(len(participant)).reshape(n_participants, items),
    )


def _wilcoxon_p(differences: np.ndarray) -> np.ndarray:
    """Two-sided p of the Wilcoxon signed-rank test per row, normal approximation with tie
    correction and zeros dropped (scipy.stats.wilcoxon, method="approx", zero_method="wilcox",
    correction=False). NaN entries are missing sources; rows with no non-zero difference give NaN."""
    d = np.where(np.abs(differences) < 1e-12, np.nan, differences)
    magnitude = np.round(np.abs(d), 9)
    ranks = stats.rankdata(magnitude, axis=1, nan_policy="omit")
    n = np.sum(~np.isnan(d), axis=1).astype(np.float64)
    r_plus = np.nansum(np.where(d > 0, ranks, 0.0), axis=1)
    # Tie correction: Σ over tie groups of t³ − t = Σ over entries of (t_i² − 1), t_i = the size
    # of entry i's group, counted on each row's sorted magnitudes.
    ordered = np.sort(magnitude, axis=1)
    rows = np.arange(ordered.shape[0])[:, None]
    finite = ~np.isnan(ordered)
    # Rows laid end to end in one sorted vector (answers' differences are far below the band).
    offset = (np.where(finite, ordered, 5e5) + rows * 1e6).ravel()
    left = np.searchsorted(offset, offset, side="left")
    right = np.searchsorted(offset, offset, side="right")
    ties = np.where(finite.ravel(), (right - left).astype(np.float64) ** 2 - 1.0, 0.0).reshape(ordered.shape)
    variance = n * (n + 1) * (2 * n + 1) / 24.0 - ties.sum(axis=1) / 48.0
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (r_plus - n * (n + 1) / 4.0) / np.sqrt(variance)
    p = 2.0 * special.ndtr(-np.abs(z))
    return np.where((n > 0) & (variance > 0), p, np.nan)


def _t_p(differences: np.ndarray) -> np.ndarray:
    """Two-sided p of the paired t-test per row (NaN = missing source)."""
    n = np.sum(~np.isnan(differences), axis=1).astype(np.float64)
    mean = np.nanmean(differences, axis=1)
    sd = np.nanstd(differences, axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = mean / (sd / np.sqrt(n))
    return np.where(n > 1, 2 * stats.t.sf(np.abs(t), n - 1), np.nan)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values per row; NaN entries (untestable pairs) stay NaN and are left out
    of the family, as radlay's analysis leaves them out."""
    filled = np.where(np.isnan(p), np.inf, p)
    order = np.argsort(filled, axis=1, kind="stable")
    ordered = np.take_along_axis(filled, order, axis=1)
    m = np.sum(~np.isnan(p), axis=1, keepdims=True)
    factor = np.maximum(m - np.arange(p.shape[1])[None, :], 1)
    adjusted = np.minimum(np.maximum.accumulate(np.minimum(ordered * factor, 1.0), axis=1), 1.0)
    result = np.empty_like(adjusted)
    np.put_along_axis(result, order, adjusted, axis=1)
    return np.where(np.isnan(p), np.nan, result)


def _answers(
    settings: PowerSettings,
    latent: np.ndarray,
    rng: np.random.Generator,
    scale: float = 1.0,
    system: np.ndarray | None = None,
) -> np.ndarray:
    """Answers on the outcome's scale from latent values without the residual (in place);
    `system`: each answer's system, for residual variances per system."""
    outcome = settings.outcome
    if outcome.kind == "binary":
        np.clip(latent, 0.0, 1.0, out=latent)
        return (rng.random(latent.shape) < latent).astype(np.float64)
    if settings.residual_vars is None or system is None:
        residual_sd, _ = _latent_sd(settings, scale)
    else:
        residual_sd = scale * np.sqrt(_residual_vars(settings))[system]
    latent += rng.standard_normal(latent.shape) * residual_sd
    if outcome.kind == "ordinal":
        np.round(latent, out=latent)
    return np.clip(latent, outcome.low, outcome.high, out=latent)


def _block_demean(columns: np.ndarray, w: np.ndarray, part, src, n_part, n_src, tol=1e-9, max_iter=200):
    """Residuals of columns (C, S, n) on participant and source blocks (weights w, (S, n)), by
    alternating projections."""
    c, s, n = columns.shape
    out = columns * w[None]
    p_index = (np.arange(s)[:, None] * n_part + part).ravel()
    s_index = (np.arange(s)[:, None] * n_src + src).ravel()
    p_count = np.bincount(p_index, weights=w.ravel(), minlength=s * n_part)
    s_count = np.bincount(s_index, weights=w.ravel(), minlength=s * n_src)
    p_count[p_count == 0] = np.inf
    s_count[s_count == 0] = np.inf
    for _ in range(max_iter):
        change = 0.0
        for index, count in ((p_index, p_count), (s_index, s_count)):
            for j in range(c):
                means = np.bincount(index, weights=out[j].ravel(), minlength=count.size) / count
                step = means[index].reshape(s, n) * w
                out[j] -= step
                change = max(change, float(np.max(np.abs(step))))
        if change < tol:
            break
    return out


def _block_rank(w: np.ndarray, part: np.ndarray, src: np.ndarray, n_part: int, n_src: int) -> np.ndarray:
    """Rank of the participant + source block columns per simulation: observed participants plus
    observed sources minus the connected components of their bipartite graph (sources windowed
    by the Latin square can split it into several)."""
    ranks = np.empty(w.shape[0])
    for i in range(w.shape[0]):
        seen = w[i] > 0
        edges = sparse.coo_matrix(
            (np.ones(int(seen.sum())), (part[i][seen], n_part + src[i][seen])),
            shape=(n_part + n_src, n_part + n_src),
        )
        nodes = np.zeros(n_part + n_src, dtype=bool)
        nodes[part[i][seen]] = True
        nodes[n_part + src[i][seen]] = True
        _, labels = csgraph.connected_components(edges, directed=False)
        ranks[i] = nodes.sum() - len(np.unique(labels[nodes]))
    return ranks


def _mixed_p(y, w, part, src, sys_, n_part, n_src, k, block_rank=None):
    """Holm-free p-values (S, pairs) of the intra-block Wald test of every system pair.
    `block_rank` (S,): the rank of the block columns when known (else computed)."""
    s, n = y.shape
    dummies = np.stack([(sys_ == j).astype(np.float64) for j in range(1, k)], axis=0)  # (k-1, S, n)
    columns = np.concatenate([y[None], np.broadcast_to(dummies, (k - 1, s, n))], axis=0)
    resid = _block_demean(columns, w, part, src, n_part, n_src)
    ry, rx = resid[0], np.moveaxis(resid[1:], 0, -1)  # (S, n), (S, n, k-1)
    xtx = np.einsum("snj,snl->sjl", rx, rx)
    xty = np.einsum("snj,sn->sj", rx, ry)
    beta = np.linalg.solve(xtx, xty[..., None])[..., 0]
    rss = np.sum((ry - np.einsum("snj,sj->sn", rx, beta)) ** 2, axis=1)
    if block_rank is None:
        block_rank = _block_rank(w, part, src, n_part, n_src)
    dof = w.sum(axis=1) - block_rank - (k - 1)
    sigma2 = rss / np.maximum(dof, 1)
    cov = np.linalg.inv(xtx) * sigma2[:, None, None]
    full_beta = np.concatenate([np.zeros((s, 1)), beta], axis=1)
    full_cov = np.zeros((s, k, k))
    full_cov[:, 1:, 1:] = cov
    pvalues = []
    for a, b in _pairs(k):
        diff = full_beta[:, a] - full_beta[:, b]
        var = full_cov[:, a, a] + full_cov[:, b, b] - 2 * full_cov[:, a, b]
        with np.errstate(invalid="ignore", divide="ignore"):
            t = diff / np.sqrt(var)
        pvalues.append(2 * stats.t.sf(np.abs(t), np.maximum(dof, 1)))
    return np.stack(pvalues, axis=1)


def _pairs(k: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(k) for b in range(a + 1, k)]


@dataclass(frozen=True)
class _Cells:
    """Completers' answers sorted by (source, system) cell, for sums with np.add.reduceat."""

    order: np.ndarray
    starts: np.ndarray
    cell_ids: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, design: _Design, k: int) -> _Cells:
        cell = design.source * k + design.system
        order = np.argsort(cell, kind="stable")
        ordered = cell[order]
        starts = np.flatnonzero(np.r_[True, np.diff(ordered) != 0])
        counts = np.diff(np.r_[starts, len(order)]).astype(np.float64)
        return cls(order, starts, ordered[starts], counts)


def simulate_design(
    settings: PowerSettings,
    n_participants: int,
    n_sources: int,
    *,
    seed: int | None = None,
    mixed_simulations: int | None = None,
) -> CellPower:
    """Power of one design (participants who complete × sources). The mixed-model analysis runs on
    the first `mixed_simulations` simulated studies (default: all), its standard error counted
    on those."""
    if n_participants < 2 or n_sources < 2:
        raise ValueError("A design needs at least two participants and two sources.")
    k = settings.n_systems
    scale = latent_scale(settings)
    baseline, shifted = latent_means(settings)
    means = np.full(k, baseline)
    means[1] = shifted  # system 1 is the shifted one, system 0 its planned comparator
    design = _design(settings, n_participants, n_sources)
    cells = _Cells.of(design, k)
    part, src, sys_ = (a[cells.order] for a in (design.participant, design.source, design.system))
    # A drop-out with an answer joins its completer's component: one more independent block column.
    completers_rank = _block_rank(np.ones((1, len(part))), part[None], src[None], n_participants, n_sources)[
        0
    ]
    n_dropouts = round(n_participants * settings.dropout / (1 - settings.dropout))
    items = design.rows_items.shape[1]
    n_part = n_participants + n_dropouts
    n_obs = len(part) + n_dropouts * items
    n_mixed = (
        settings.n_simulations
        if mixed_simulations is None
        else min(mixed_simulations, settings.n_simulations)
    )
    n_mixed = n_mixed if settings.mixed_model else 0
    rng = np.random.default_rng(settings.seed if seed is None else seed)
    chunk = max(1, min(settings.n_simulations, _MAX_FLOATS // max(n_obs * 2, 1)))
    planned = _pairs(k).index((0, 1))
    sd_p, sd_s = scale * math.sqrt(settings.participant_var), scale * math.sqrt(settings.source_var)
    detected = detected_mixed = 0
    differences = []
    done = 0
    while done < settings.n_simulations:
        size = min(chunk, settings.n_simulations - done)
        u = rng.standard_normal((size, n_part)) * sd_p
        v = rng.standard_normal((size, n_sources)) * sd_s
        latent = u[:, part]
        latent += v[:, src]
        latent += means[sys_]
        if settings.interaction_var > 0:
            interaction = (
                rng.standard_normal((size, n_part * k)) * scale * math.sqrt(settings.interaction_var)
            )
            latent += interaction[:, part * k + sys_]
        y = _answers(settings, latent, rng, scale, sys_)
        totals = np.zeros((size, n_sources * k))
        counts = np.zeros((size, n_sources * k))
        totals[:, cells.cell_ids] = np.add.reduceat(y, cells.starts, axis=1)
        counts[:, cells.cell_ids] = cells.counts
        if n_dropouts:
            # Each drop-out holds the row of a random completer and answers a random share of it.
            held = design.rows_items[rng.integers(0, n_participants, (size, n_dropouts))].reshape(size, -1)
            share = rng.random((size, n_dropouts, 1))
            w_drop = (rng.random((size, n_dropouts, items)) < share).reshape(size, -1).astype(np.float64)
            p_drop = np.repeat(np.arange(n_participants, n_part), items)
            s_drop, k_drop = design.source[held], design.system[held]
            latent = u[:, p_drop] + np.take_along_axis(v, s_drop, axis=1) + means[k_drop]
            if settings.interaction_var > 0:
                latent += np.take_along_axis(interaction, p_drop * k + k_drop, axis=1)
            y_drop = _answers(settings, latent, rng, scale, k_drop)
            index = (np.arange(size)[:, None] * (n_sources * k) + s_drop * k + k_drop).ravel()
            totals += np.bincount(index, weights=(y_drop * w_drop).ravel(), minlength=totals.size).reshape(
                size, -1
            )
            counts += np.bincount(index, weights=w_drop.ravel(), minlength=totals.size).reshape(size, -1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cell_means = (totals / counts).reshape(size, n_sources, k)
        pair_d = np.stack([cell_means[:, :, a] - cell_means[:, :, b] for a, b in _pairs(k)], axis=1)
        flat = pair_d.reshape(-1, n_sources)
        p = (_wilcoxon_p(flat) if settings.test == "wilcoxon" else _t_p(flat)).reshape(size, -1)
        detected += int(np.sum(holm(p)[:, planned] < settings.alpha))
        differences.append(np.nanmean(cell_means[:, :, 1] - cell_means[:, :, 0], axis=1))
        mixed_here = max(0, min(size, n_mixed - done))
        if mixed_here:
            full_part = np.broadcast_to(part, (mixed_here, len(part)))
            full_src = np.broadcast_to(src, (mixed_here, len(src)))
            full_sys = np.broadcast_to(sys_, (mixed_here, len(sys_)))
            full_y, full_w = y[:mixed_here], np.ones((mixed_here, len(part)))
            rank = np.full(mixed_here, completers_rank)
            if n_dropouts:
                full_part = np.concatenate(
                    [full_part, np.broadcast_to(p_drop, (mixed_here, len(p_drop)))], axis=1
                )
                full_src = np.concatenate([full_src, s_drop[:mixed_here]], axis=1)
                full_sys = np.concatenate([full_sys, k_drop[:mixed_here]], axis=1)
                full_y = np.concatenate([full_y, y_drop[:mixed_here]], axis=1)
                full_w = np.concatenate([full_w, w_drop[:mixed_here]], axis=1)
                answered = w_drop[:mixed_here].reshape(mixed_here, n_dropouts, items).any(axis=2)
                rank = rank + answered.sum(axis=1)
            mixed = _mixed_p(full_y, full_w, full_part, full_src, full_sys, n_part, n_sources, k, rank)
            detected_mixed += int(np.sum(holm(mixed)[:, planned] < settings.alpha))
        done += size
    power = detected / settings.n_simulations
    mixed_power = detected_mixed / n_mixed if n_mixed else None

    def mcse(q: float, n: int) -> float:
        return math.sqrt(q * (1 - q) / n)

    return CellPower(
        participants=n_participants,
        sources=n_sources,
        answers=int(len(part)),
        recruited=n_part,
        power=power,
        power_se=mcse(power, settings.n_simulations),
        mixed_power=mixed_power,
        mixed_power_se=mcse(mixed_power, n_mixed) if n_mixed else None,
        observed_difference=float(np.nanmean(np.concatenate(differences))),
    )


def simulate_answers(
    settings: PowerSettings,
    n_participants: int,
    n_sources: int,
    *,
    system_means: Sequence[float],
    n_studies: int,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Simulated answers of `n_studies` studies of one design (no drop-outs), with the given
    latent system means: (answers (n_studies, n), participant, source, system index per answer)."""
    design = _design(settings, n_participants, n_sources)
    rng = np.random.default_rng(seed)
    scale = latent_scale(settings)
    u = rng.standard_normal((n_studies, n_participants)) * scale * math.sqrt(settings.participant_var)
    v = rng.standard_normal((n_studies, n_sources)) * scale * math.sqrt(settings.source_var)
    latent = (
        u[:, design.participant]
        + v[:, design.source]
        + np.asarray(system_means, dtype=np.float64)[design.system]
    )
    if settings.interaction_var > 0:
        k = settings.n_systems
        w = rng.standard_normal((n_studies, n_participants * k)) * scale * math.sqrt(settings.interaction_var)
        latent += w[:, design.participant * k + design.system]
    answers = _answers(settings, latent, rng, scale, design.system)
    return answers, design.participant, design.source, design.system


def design_axis(maximum: int, *, step: int, minimum: int, points: int = 20) -> list[int]:
    """Up to `points` values from `minimum` to `maximum`, multiples of `step` (a whole number of
    Latin-square cycles), always including `maximum` rounded down to a multiple of `step`."""
    top = max(minimum, (maximum // step) * step)
    start = max(step, ((minimum + step - 1) // step) * step)
    candidates = list(range(start, top + 1, step))
    if len(candidates) <= points:
        return candidates
    picks = np.unique(np.round(np.linspace(0, len(candidates) - 1, points)).astype(int))
    return [candidates[i] for i in picks]


def power_grid(
    settings: PowerSettings,
    participants: Sequence[int],
    sources: Sequence[int],
    *,
    mixed_simulations: int | None = None,
) -> PowerGrid:
    """Power for every (participants, sources) design; each cell has its own seed stream so a
    cell's figure does not depend on which other cells are computed."""
    baseline, shifted = latent_means(settings)
    scale = latent_scale(settings)
    cells = []
    for n_participants in participants:
        for n_sources in sources:
            seed = int(
                np.random.SeedSequence([settings.seed, n_participants, n_sources]).generate_state(1)[0]
            )
            cells.append(
                simulate_design(
                    settings, n_participants, n_sources, seed=seed, mixed_simulations=mixed_simulations
                )
            )
    return PowerGrid(
        settings=settings,
        participants=list(participants),
        sources=list(sources),
        cells=cells,
        latent={"baseline": baseline, "shifted": shifted, "scale": scale},
        mixed_simulations=mixed_simulations,
    )
