"""The adaptive allocation's pure computation (measures/stats/adaptive_allocation.py) against
independent references: pandas group means for the estimate, statsmodels' two-way cluster-robust
covariance for the variance, a brute-force Owen sum for the projection, a Monte Carlo variance
for the fixed design's formula, and `latin_square.next_row` for the row order."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.sandwich_covariance import cov_cluster_2groups

from measures.latin_square import LatinSquare, next_row
from measures.stats import adaptive_allocation as aa


def _square_answers(rng, square: LatinSquare, participants: int, *, noise=None, shift=0.3):
    """Normal answers on the square's rows 0..participants-1 (no rounding): participant, source,
    participant × system effects and a residual whose sd may depend on the source."""
    rows = [square.pairs(r) for r in range(participants)]
    p = np.repeat(np.arange(participants), square.m)
    s = np.array([pair[0] for row in rows for pair in row])
    k = np.array([pair[1] for row in rows for pair in row])
    sd = np.ones(square.n_sources) if noise is None else noise
    y = (
        shift * (k == 1)
        + rng.normal(0, 0.5, participants)[p]
        + rng.normal(0, 0.7, square.n_sources)[s]
        + rng.normal(0, 0.3, (participants, square.n_systems))[p, k]
        + rng.normal(0, 0.2, (square.n_sources, square.n_systems))[s, k]
        + rng.normal(0, 1, p.size) * sd[s]
    )
    return y, p, s, k


def test_the_estimate_is_the_mean_over_paired_sources_of_the_cell_mean_differences():
    rng = np.random.default_rng(1)
    square = LatinSquare(n_sources=12, n_systems=3, per_participant=6)
    y, p, s, k = _square_answers(rng, square, 13)
    interval = aa.primary_interval(y, p, s, k, a=1, b=2)
    frame = pd.DataFrame({"y": y, "s": s, "k": k})
    cells = frame[frame.k.isin([1, 2])].groupby(["s", "k"]).y.mean().unstack().dropna()
    assert interval.n_sources == len(cells)
    assert interval.estimate == pytest.approx((cells[1] - cells[2]).mean(), abs=1e-12)
    assert interval.low < interval.estimate < interval.high


def test_the_two_way_cluster_variance_equals_statsmodels():
    # Intercept-only OLS: the coefficient is the mean, its scores resid / n; statsmodels' CRV1
    # correction G/(G − 1) · (n − 1)/(n − K) is G/(G − 1) with K = 1, as ours.
    rng = np.random.default_rng(2)
    square = LatinSquare(n_sources=10, n_systems=2, per_participant=4)
    y, p, s, _ = _square_answers(rng, square, 9)
    fit = sm.OLS(y, np.ones((y.size, 1))).fit()
    both, _, _ = cov_cluster_2groups(fit, p, s)
    ours = aa.two_way_cluster_variance(fit.resid / y.size, p, s)
    assert ours == pytest.approx(float(both[0, 0]), rel=1e-10)


def test_the_projection_is_owens_sum_with_the_cells_spreads_and_the_planners_components():
    rng = np.random.default_rng(3)
    square = LatinSquare(n_sources=8, n_systems=2, per_participant=4)
    y, p, s, k = _square_answers(rng, square, 12)
    sigma_p, sigma_w, sigma_c = 0.25, 0.09, 0.04
    interval = aa.primary_interval(
        y, p, s, k, a=1, b=0, participant_var=sigma_p, interaction_var=sigma_w, cell_var=sigma_c
    )
    # Brute force: every pair of answers, the covariance the model gives it.
    n_cells = {(si, ki): int(np.sum((s == si) & (k == ki))) for si, ki in zip(s, k, strict=True)}
    paired = {si for si in set(s.tolist()) if n_cells.get((si, 0)) and n_cells.get((si, 1))}
    c = np.array(
        [
            (1 if ki == 1 else -1) / (len(paired) * n_cells[(si, ki)]) if si in paired else 0.0
            for si, ki in zip(s, k, strict=True)
        ]
    )
    _, spreads = aa.cell_variances(y, s, k, n_sources=8, n_systems=2)
    variance = 0.0
    for i in range(y.size):
        for j in range(y.size):
            if s[i] == s[j] and k[i] == k[j]:  # the same cell: its source × system effect
                variance += c[i] * c[j] * sigma_c
            if i == j:
                variance += c[i] ** 2 * spreads[s[i], k[i]]
            elif p[i] == p[j]:
                variance += c[i] * c[j] * (sigma_p + (sigma_w if k[i] == k[j] else 0.0))
    quantile = stats.t.ppf(0.975, min(12, len(paired)) - 1)
    assert interval.projected_width == pytest.approx(2 * quantile * math.sqrt(variance), rel=1e-9)


def test_cell_variances_shrink_each_cell_towards_its_systems_pooled_spread():
    y = np.array([1.0, 3.0, 2.0, 2.0, 5.0, 1.0])
    s = np.array([0, 0, 1, 1, 0, 0])
    k = np.array([0, 0, 0, 0, 1, 1])
    counts, variances = aa.cell_variances(y, s, k, n_sources=2, n_systems=2, prior_answers=2.0)
    assert counts.tolist() == [[2, 2], [2, 0]]
    pooled = (2.0 + 0.0) / 2  # system 0: SS 2 and 0, one degree of freedom each
    assert variances[0, 0] == pytest.approx((2.0 + 2 * pooled) / (1 + 2))
    assert variances[1, 0] == pytest.approx((0.0 + 2 * pooled) / (1 + 2))
    assert variances[1, 1] == pytest.approx(8.0)  # an empty cell: its system's pooled spread


def test_with_equal_spreads_and_counts_the_adaptive_row_is_the_fixed_squares():
    square = LatinSquare(n_sources=12, n_systems=2, per_participant=4)
    rows: list[int] = []
    for _ in range(2 * square.period):
        answered = np.zeros((12, 2))
        counts = aa.expected_counts(square, answered, rows)
        row = aa.adaptive_row(square, rows, counts, np.ones((12, 2)), a=1, b=0)
        assert row == next_row(square, rows)
        rows.append(row)


def test_rows_covering_unseen_cells_come_first_then_the_noisiest_window():
    square = LatinSquare(n_sources=8, n_systems=2, per_participant=4)  # windows {0..3}, {4..7}
    counts = np.full((8, 2), 3.0)
    counts[5, 1] = 0  # row with source 5 on system 1 first
    variances = np.ones((8, 2))
    row = aa.adaptive_row(square, [], counts, variances, a=1, b=0)
    assert (5, 1) in square.pairs(row)
    counts[5, 1] = 3
    variances[:4] = 4.0  # the first window's answers vary four times as much
    row = aa.adaptive_row(square, [], counts, variances, a=1, b=0)
    assert set(square.sources(row)) == {0, 1, 2, 3}


def test_expected_counts_take_what_live_participants_owe():
    square = LatinSquare(n_sources=4, n_systems=2)
    answered = np.zeros((4, 2))
    answered[0, 0] = 5
    counts = aa.expected_counts(square, answered, [0, 0, 1])
    assert counts[0, 0] == 5  # answered more than owed
    assert counts[1, 1] == 2 and counts[1, 0] == 1  # rows 0, 0 give source 1 system 1; row 1 system 0


@pytest.mark.heavy
def test_the_fixed_design_width_matches_simulated_studies():
    square = LatinSquare(n_sources=12, n_systems=2, per_participant=6)
    participants = 2 * square.period
    rng = np.random.default_rng(5)
    estimates = []
    for _ in range(3000):
        y, p, s, k = _square_answers(rng, square, participants)
        frame = pd.DataFrame({"y": y, "s": s, "k": k}).groupby(["s", "k"]).y.mean().unstack()
        estimates.append(float((frame[1] - frame[0]).mean()))
    width = aa.fixed_design_width(
        participant_var=0.25,
        interaction_var=0.09,
        residual_a=1.0,
        residual_b=1.0,
        square=square,
        participants=participants,
        cell_var=0.04,
    )
    quantile = stats.t.ppf(0.975, min(participants, 12) - 1)
    simulated = float(np.var(estimates, ddof=1))
    # The Monte Carlo variance of a variance from 3,000 draws is about 2.6 % of it.
    assert (width / (2 * quantile)) ** 2 == pytest.approx(simulated, rel=0.08)


def test_the_stopping_rule_needs_the_width_and_enough_sources():
    wide = aa.PrimaryInterval(0.2, 0.0, 0.4, 0.1, 10.0, 8, 8, 80, projected_width=0.35)
    assert aa.can_close(wide, target_width=0.4)
    assert not aa.can_close(wide, target_width=0.3)
    assert not aa.can_close(wide, target_width=0.4, min_sources=9)
    none = aa.PrimaryInterval(0.2, None, None, None, None, 3, 2, 12)
    assert not aa.can_close(none, target_width=10.0)


def test_too_few_answers_give_an_estimate_without_an_interval():
    interval = aa.primary_interval([3.0, 4.0], ["p1", "p2"], [0, 0], [0, 1], a=1, b=0)
    assert interval.estimate == pytest.approx(1.0)
    assert interval.low is None and interval.projected_width is None and interval.n_sources == 1
    with pytest.raises(ValueError, match="same length"):
        aa.primary_interval([1.0], [1, 2], [0], [0], a=1, b=0)
