"""Adaptive allocation of Latin-square rows and the stopping rule of a study's primary comparison
(pure computation, no Django: evaluation/planning/adaptive.py builds the inputs from the database).

**The primary quantity** is the difference of two systems' mean answers on one outcome, paired
by source as radlay's comparisons pair them (measures/stats/comparisons.py): for every source
with answers of both systems, d_s = mean(answers of system a on s) − mean(answers of b on s);
the estimate is the mean of the d_s over those S sources, Σ_k c_k y_k with c_k = ±1/(S n_{s,j})
on answer k of source s and system j. Weighting sources equally keeps the estimand fixed
whatever the allocation: an answer-weighted mean(a) − mean(b) would weight the sources the
allocation favours, whose differences (near a scale's ceiling, smaller) are not the others'.

**Its interval** is estimate ± t · SE with Cameron, Gelbach & Miller's (2011) two-way
cluster-robust variance (participants and sources as crossed clusters: V_participants +
V_sources − V_cells of the contrast's scores c_k · residual_k) and t with min(P, S) − 1 degrees
of freedom. It needs no model of how precise each d_s is, so an unequal (adaptive) allocation
changes only its width; the participant × system interaction, which does not cancel in a
difference, enters through the participant clusters.

**The allocation** hands a newcomer the Latin-square row (measures/latin_square.py) that most
reduces the estimate's variance, taken as Σ_k c_k² σ²_{s,j}: one more answer on cell (s, j)
takes σ²_{s,j} (1/n − 1/(n + 1)) / S² off it. σ²_{s,j} is the cell's variance of one answer,
estimated from the cell's answers and shrunk towards its system's pooled within-cell variance
with the weight of `PRIOR_ANSWERS` answers (a cell with two answers does not steer the study on
its own). Rows covering a cell of the comparison without any answer come first (a source enters
the estimate only once both systems are seen); ties fall back on `latin_square.next_row`'s
coverage order. Only whole rows of the square are handed out, so every participant still sees a
balanced row: adaptivity chooses which window of sources and which rotation of systems, never
breaks the square. It is a greedy sequential design (Robbins 1952): each step the best next
allocation given the current estimates, which drifts towards Neyman's allocation n ∝ σ across
sources (Cochran 1977, Sampling Techniques, section 5.5).

**The stopping rule** reads a *projected* width, not the interval's own: 2 · t · √V with

    V = Σ_k c_k² σ²_{s_k, j_k} + σ²_p (Σ_p (Σ_{k∈p} c_k)² − Σ_k c_k²)
                              + σ²_w (Σ_{p,j} (Σ_{k∈(p,j)} c_k)² − Σ_k c_k²) + σ²_c · 2 / S,

Owen's (2007) variance of a linear estimator in a crossed design, with each cell's within-cell
variance (which holds σ²_p + σ²_w + σ²_e) for the diagonal and the pilot's participant,
participant × system and source × system (σ²_c, the crossed difference model's) components for
the answers a participant or a cell shares. The study
can close once it is at most the target on at least MIN_SOURCES paired sources. Why not the
interval's own width: a fixed-width sequential rule on a noisy variance estimate (Chow & Robbins
1965) stops when that estimate is low by chance, and the closing interval then undercovers (86 %
for a nominal 95 % in our simulation at 20 participants). The within-cell spreads the projection
reads are, for normal answers, independent of the cell means the estimate is made of (Cochran's
theorem), so stopping on them selects nothing in the estimate; allocation reads the same spreads
for the same reason. The seeded simulation (tests/evaluation/planning/test_sequential.py,
bench/adaptive_allocation.py) checks the closing interval's coverage, fixed and adaptive.

**Reachable targets**: `fixed_design_width` is the width the fixed square gives at a number of
participants from the planner's components (participant, participant × system, residual per
system): a target below its width at the study's maximum number of participants is refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from measures.latin_square import LatinSquare, pair_counts
from measures.stats.interval_methods import MIN_PARTICIPANTS, MIN_SOURCES

PRIOR_ANSWERS = 4.0  # weight of the pooled variance in a cell's shrunk variance, in answers


@dataclass(frozen=True)
class PrimaryInterval:
    """The primary comparison now: the estimate (mean of the per-source differences), its
    interval (None below MIN_PARTICIPANTS participants or MIN_SOURCES paired sources) and the
    projected width the stopping rule reads (None likewise)."""

    estimate: float | None
    low: float | None
    high: float | None
    se: float | None
    df: float | None
    n_sources: int
    n_participants: int
    n_answers: int
    projected_width: float | None = None

    @property
    def width(self) -> float | None:
        if self.low is None or self.high is None:
            return None
        return self.high - self.low

    def covers(self, value: float) -> bool:
        return self.low is not None and self.high is not None and self.low <= value <= self.high


def _as_arrays(*arrays: Iterable[Any]) -> list[np.ndarray]:
    converted = [a if isinstance(a, np.ndarray) else np.asarray(list(a)) for a in arrays]
    if len({a.size for a in converted}) != 1:
        raise ValueError("values, participants, sources and systems must have the same length")
    return converted


def _codes(labels: np.ndarray) -> np.ndarray:
    return np.asarray(np.unique(labels, return_inverse=True)[1], dtype=np.int64).ravel()


def _cluster_sum(codes: np.ndarray, scores: np.ndarray) -> tuple[float, int]:
    totals = np.bincount(codes, weights=scores)
    return float(np.sum(totals**2)), int(np.count_nonzero(np.bincount(codes)))


def two_way_cluster_variance(
    scores: Iterable[float], participant: Iterable[Any], source: Iterable[Any]
) -> float:
    """Cameron, Gelbach & Miller's (2011) two-way cluster-robust variance of Σ scores (scores =
    weight × residual per answer): V_participants + V_sources − V_cells, each
    V_G = G/(G − 1) · Σ_g (Σ_{answers of g} score)², cells = (participant, source) pairs. Where
    the subtraction leaves nothing positive (a small sample), the larger one-way term."""
    z, p, s = _as_arrays(scores, participant, source)
    z = z.astype(np.float64)
    p_codes, s_codes = _codes(p), _codes(s)
    terms = []
    for codes in (p_codes, s_codes, p_codes * (int(s_codes.max()) + 1) + s_codes):
        total, groups = _cluster_sum(codes, z)
        terms.append(total * groups / (groups - 1) if groups > 1 else total)
    by_participant, by_source, by_cell = terms
    combined = by_participant + by_source - by_cell
    return combined if combined > 0 else max(by_participant, by_source)


def cell_variances(
    values: Iterable[float],
    source: Iterable[int],
    system: Iterable[int],
    *,
    n_sources: int,
    n_systems: int,
    prior_answers: float = PRIOR_ANSWERS,
) -> tuple[np.ndarray, np.ndarray]:
    """(answers, shrunk variance of one answer) per (source, system) cell, both (n_sources,
    n_systems). A cell's variance is (SS_cell + prior_answers · pooled) / (n_cell − 1 +
    prior_answers), pooled = the system's within-cell variance over all its cells (1, the
    spread of a Likert answer, where a system has no cell with two answers yet)."""
    y, s, k = _as_arrays(values, source, system)
    y = y.astype(np.float64)
    keep = ~np.isnan(y)
    y, s, k = y[keep], s[keep].astype(np.int64), k[keep].astype(np.int64)
    cell = s * n_systems + k
    size = n_sources * n_systems
    counts = np.bincount(cell, minlength=size).astype(np.float64).reshape(n_sources, n_systems)
    sums = np.bincount(cell, weights=y, minlength=size).reshape(n_sources, n_systems)
    squares = np.bincount(cell, weights=y * y, minlength=size).reshape(n_sources, n_systems)
    with np.errstate(invalid="ignore", divide="ignore"):
        ss = np.where(counts > 0, squares - sums * sums / np.maximum(counts, 1.0), 0.0)
    ss = np.maximum(ss, 0.0)
    df = np.maximum(counts - 1, 0.0)
    pooled_df = df.sum(axis=0)
    pooled = np.where(pooled_df > 0, ss.sum(axis=0) / np.maximum(pooled_df, 1.0), 1.0)
    variances = (ss + prior_answers * pooled[None, :]) / (df + prior_answers)
    return counts, variances


def primary_interval(
    values: Iterable[float],
    participant: Iterable[Any],
    source: Iterable[int],
    system: Iterable[int],
    *,
    a: int,
    b: int,
    confidence: float = 0.95,
    participant_var: float = 0.0,
    interaction_var: float = 0.0,
    cell_var: float = 0.0,
    prior_answers: float = PRIOR_ANSWERS,
) -> PrimaryInterval:
    """Mean over sources of mean(a) − mean(b), its interval and the projected width (module
    docstring). `source`, `system`: non-negative integer codes per answer; NaN values dropped.
    `participant_var`, `interaction_var`, `cell_var` (source × system): the planner's components
    for the projection."""
    y, p, s, k = _as_arrays(values, participant, source, system)
    y = y.astype(np.float64)
    keep = ~np.isnan(y) & ((k == a) | (k == b))
    y, p, s = y[keep], p[keep], s[keep].astype(np.int64)
    side = (k[keep] == b).astype(np.int64)  # 0: system a, 1: system b
    if y.size == 0:
        return PrimaryInterval(None, None, None, None, None, 0, 0, 0)
    n_cols = int(s.max()) + 1
    counts = np.zeros((2, n_cols))
    np.add.at(counts, (side, s), 1.0)
    paired = (counts[0] > 0) & (counts[1] > 0)
    keep = paired[s]
    y, p, s, side = y[keep], p[keep], s[keep], side[keep]
    n_sources = int(paired.sum())
    n_participants = int(np.unique(p).size) if p.size else 0
    if n_sources == 0:
        return PrimaryInterval(None, None, None, None, None, 0, n_participants, 0)
    weights = np.where(side == 0, 1.0, -1.0) / (n_sources * counts[side, s])
    estimate = float(weights @ y)
    if n_sources < MIN_SOURCES or n_participants < MIN_PARTICIPANTS:
        return PrimaryInterval(estimate, None, None, None, None, n_sources, n_participants, int(y.size))
    df = min(n_participants, n_sources) - 1
    quantile = float(stats.t.ppf(0.5 + confidence / 2, df))
    # Residuals around the two systems' source-balanced means, whose difference is the estimate.
    sums = np.zeros((2, n_cols))
    np.add.at(sums, (side, s), y)
    balanced = (sums[:, paired] / counts[:, paired]).mean(axis=1)
    variance = two_way_cluster_variance(weights * (y - balanced[side]), p, s)
    se = math.sqrt(variance)
    # The projection: within-cell spreads on the diagonal, the planner's components off it.
    _, spreads = cell_variances(y, s, side, n_sources=n_cols, n_systems=2, prior_answers=prior_answers)
    diagonal = float(np.sum(weights**2))
    p_codes = _codes(p)
    shared_p, _ = _cluster_sum(p_codes, weights)
    shared_w, _ = _cluster_sum(p_codes * 2 + side, weights)
    projected = (
        float(np.sum(weights**2 * spreads[s, side]))
        + participant_var * (shared_p - diagonal)
        + interaction_var * (shared_w - diagonal)
        # Each paired source's two cells sum to ±1/S: a source × system effect adds 2/S of it.
        + cell_var * 2.0 / n_sources
    )
    return PrimaryInterval(
        estimate,
        estimate - quantile * se,
        estimate + quantile * se,
        se,
        float(df),
        n_sources,
        n_participants,
        int(y.size),
        projected_width=2 * quantile * math.sqrt(max(projected, 0.0)),
    )


def can_close(interval: PrimaryInterval, *, target_width: float, min_sources: int = MIN_SOURCES) -> bool:
    """The stopping rule: the projected width is at most `target_width`, on at least
    `min_sources` paired sources."""
    width = interval.projected_width
    return width is not None and interval.n_sources >= min_sources and width <= target_width


def row_scores(
    square: LatinSquare, counts: np.ndarray, variances: np.ndarray, *, a: int, b: int
) -> list[tuple[int, float]]:
    """Per row of the square: (cells of the comparison it covers that have no answer yet, the
    reduction of Σ_k c_k² σ²_{s,j} one answer on each of its other cells of the comparison
    gives, the common 1/S² left out)."""
    scores = []
    for row in range(square.period):
        empty, gain = 0, 0.0
        for source, system in square.pairs(row):
            if system not in (a, b):
                continue
            n = counts[source, system]
            if n <= 0:
                empty += 1
            else:
                gain += variances[source, system] * (1.0 / n - 1.0 / (n + 1.0))
        scores.append((empty, gain))
    return scores


def adaptive_row(
    square: LatinSquare,
    live_rows: Iterable[int],
    counts: np.ndarray,
    variances: np.ndarray,
    *,
    a: int,
    b: int,
) -> int:
    """The row to hand to a newcomer: the one whose answers most narrow the primary estimate
    (module docstring). `counts`: the answers each cell has or is owed by live participants
    (`expected_counts`); `live_rows` break ties as `latin_square.next_row` does."""
    live = [row % square.period for row in live_rows]
    coverage = pair_counts(square, live)
    holders: dict[int, int] = {}
    for row in live:
        holders[row] = holders.get(row, 0) + 1
    scores = row_scores(square, counts, variances, a=a, b=b)

    def key(row: int) -> tuple[float, float, int, int, int]:
        empty, gain = scores[row]
        return (-empty, -gain, sum(coverage[p] for p in square.pairs(row)), holders.get(row, 0), row)

    return min(range(square.period), key=key)


def expected_counts(square: LatinSquare, answered: np.ndarray, live_rows: Iterable[int]) -> np.ndarray:
    """Answers per cell once the live participants finish: the larger of the answers given and
    the live rows' coverage of the cell (a live participant owes an answer on each pair of their
    row; one who dropped out keeps the answers they gave)."""
    owed = np.zeros_like(answered, dtype=np.float64)
    for (source, system), count in pair_counts(square, live_rows).items():
        owed[source, system] = count
    counts: np.ndarray = np.maximum(answered, owed)
    return counts


def fixed_design_width(
    *,
    participant_var: float,
    interaction_var: float,
    residual_a: float,
    residual_b: float,
    square: LatinSquare,
    participants: int,
    cell_var: float = 0.0,
    confidence: float = 0.95,
) -> float:
    """The projected width (module docstring) of the fixed square after `participants` complete
    rows, every source seen participants · m / n times, each system of it a k-th of those: the
    answers of one participant on one source are one system's, so only the diagonal (each
    answer's own variance σ²_p + σ²_w + σ²_e) and the interaction's share of a participant's
    answers to one system remain after the participant's own answers cancel."""
    n, k, m = square.n_sources, square.n_systems, square.m
    per_cell = participants * m / (n * k)
    if n < MIN_SOURCES or participants < MIN_PARTICIPANTS or per_cell <= 0:
        return math.inf
    own = (2 * (participant_var + interaction_var) + residual_a + residual_b) / (per_cell * n)
    # c = 1/(n · per_cell) per answer; a participant answers m/k sources of each system.
    c = 1.0 / (n * per_cell)
    diagonal = 2 * n * per_cell * c * c
    shared_w = participants * 2 * (m / k * c) ** 2
    shared_p = participants * (m / k * c - m / k * c) ** 2
    variance = (
        own
        + participant_var * (shared_p - diagonal)
        + interaction_var * (shared_w - diagonal)
        + cell_var * 2.0 / n
    )
    df = min(participants, n) - 1
    return 2.0 * float(stats.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(max(variance, 0.0))
