"""Intervals of crossed data (participants × sources): evaluation/stats/crossed.py.

References: statsmodels' two-way ANOVA (the moment estimators of a complete table), the variance
of the mean measured over simulated studies, and the coverage of the true mean in repeated
simulated studies of the release's shape."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

from evaluation.stats.crossed import (
    crossed_difference_ci,
    crossed_group_intervals,
    crossed_mean_ci,
    variance_components,
)

SD_PARTICIPANT, SD_SOURCE, SD_RESIDUAL = 0.5, 0.5, 0.6


def crossed_table(rng, n_participants: int, n_sources: int):
    rows = np.repeat(np.arange(n_participants), n_sources)
    columns = np.tile(np.arange(n_sources), n_participants)
    values = (
        rng.normal(0, SD_PARTICIPANT, n_participants)[rows]
        + rng.normal(0, SD_SOURCE, n_sources)[columns]
        + rng.normal(0, SD_RESIDUAL, rows.size)
    )
    return values, rows, columns


def test_components_of_a_complete_table_are_the_two_way_anova_estimators():
    rng = np.random.default_rng(7)
    values, rows, columns = crossed_table(rng, 6, 15)
    frame = pd.DataFrame({"y": values, "p": rows, "s": columns})
    table = sm.stats.anova_lm(smf.ols("y ~ C(p) + C(s)", data=frame).fit())
    ms_p, ms_s, ms_e = (
        table.loc["C(p)", "mean_sq"],
        table.loc["C(s)", "mean_sq"],
        table.loc["Residual", "mean_sq"],
    )
    components = variance_components(values, rows, columns)
    assert components.residual == pytest.approx(ms_e, rel=1e-10)
    assert components.row == pytest.approx((ms_p - ms_e) / 15, rel=1e-10)
    assert components.column == pytest.approx((ms_s - ms_e) / 6, rel=1e-10)


def test_labels_and_missing_values_are_handled():
    rng = np.random.default_rng(8)
    values, rows, columns = crossed_table(rng, 5, 12)
    with_gaps = values.copy()
    with_gaps[::7] = np.nan
    keep = ~np.isnan(with_gaps)
    named = crossed_mean_ci(with_gaps, [f"P{r}" for r in rows], [f"s{c}" for c in columns])
    dropped = crossed_mean_ci(values[keep], rows[keep], columns[keep])
    assert (named.low, named.high) == pytest.approx((dropped.low, dropped.high), rel=1e-12)
    assert named.estimate == pytest.approx(values[keep].mean())
    assert named.n == keep.sum() and named.n_rows == 5 and named.n_columns == 12


def test_variance_of_the_mean_matches_simulation_on_an_unbalanced_design():
    # A Latin-square-like pattern with drop-outs: the model variance of the mean for this pattern
    # (what the interval uses, with the true components) against the variance over 3000 studies.
    rng = np.random.default_rng(11)
    rows = np.repeat(np.arange(8), 40)
    columns = np.tile(np.arange(40), 8)
    keep = ((rows + columns) % 3 == 0) & ~((rows == 7) & (columns > 10))
    rows, columns = rows[keep], columns[keep]
    n = rows.size
    expected = (
        SD_PARTICIPANT**2 * np.sum(np.bincount(rows) ** 2) / n**2
        + SD_SOURCE**2 * np.sum(np.bincount(columns) ** 2) / n**2
        + SD_RESIDUAL**2 / n
    )
    means, ses = [], []
    for _ in range(3000):
        y = (
            rng.normal(0, SD_PARTICIPANT, 8)[rows]
            + rng.normal(0, SD_SOURCE, 40)[columns]
            + rng.normal(0, SD_RESIDUAL, n)
        )
        means.append(y.mean())
        ses.append(crossed_mean_ci(y, rows, columns).se)
    assert np.var(means) == pytest.approx(expected, rel=0.08)
    # The estimated variance is unbiased up to the clipping of negative components at 0.
    assert np.mean(np.square(ses)) == pytest.approx(expected, rel=0.1)


def test_one_participant_folds_its_variance_into_the_residual():
    values = np.array([1.0, 2.0, 4.0, 3.0, 5.0])
    interval = crossed_mean_ci(values, np.zeros(5), np.arange(5))
    # One participant, every source once: the ordinary t interval of the five values.
    reference = stats.ttest_1samp(values, 0).confidence_interval(0.95)
    assert (interval.low, interval.high) == pytest.approx((reference.low, reference.high), rel=1e-9)


def test_degenerate_inputs():
    assert crossed_mean_ci([], [], []).estimate is None
    single = crossed_mean_ci([3.0], ["a"], ["s"])
    assert single.estimate == 3.0 and single.low is None
    constant = crossed_mean_ci([2.0, 2.0, 2.0, 2.0], [0, 0, 1, 1], [0, 1, 0, 1])
    assert constant.estimate == 2.0 and constant.low is None
    with pytest.raises(ValueError):
        crossed_mean_ci([1.0, 2.0], [0], [0, 1])


@pytest.mark.slow
def test_coverage_of_the_mean_on_simulated_crossed_data():
    # The release's shape: 8 laypeople × 40 sources, SDs 0.5 / 0.5 / 0.6, true mean 0.
    rng = np.random.default_rng(2024)
    replications = 600
    covered = naive_covered = 0
    for _ in range(replications):
        values, rows, columns = crossed_table(rng, 8, 40)
        interval = crossed_mean_ci(values, rows, columns)
        covered += interval.low <= 0 <= interval.high
        naive = stats.ttest_1samp(values, 0).confidence_interval(0.95)
        naive_covered += naive.low <= 0 <= naive.high
    assert 0.93 <= covered / replications <= 0.97
    # Treating the answers as independent is far off: what the crossed interval corrects.
    assert naive_covered / replications < 0.6


@pytest.mark.slow
def test_coverage_of_system_means_and_differences_in_a_latin_square():
    # 8 participants × 40 sources, each participant sees each source once with system
    # (participant + source) mod 4; system effects 0, 0.3, −0.2, 0.1 (as Table 1's panel 2).
    rng = np.random.default_rng(99)
    effects = np.array([0.0, 0.3, -0.2, 0.1])
    replications = 600
    covered_mean = covered_difference = covered_pair = 0
    for _ in range(replications):
        values, rows, columns = crossed_table(rng, 8, 40)
        system = (rows + columns) % 4
        values = values + effects[system]
        means, differences = crossed_group_intervals(values, rows, columns, system)
        covered_mean += sum(means[k].low <= effects[k] <= means[k].high for k in range(4))
        covered_difference += sum(
            d.low <= effects[a] - effects[b] <= d.high for (a, b), d in differences.items()
        )
        a, b = system == 1, system == 2
        pair = crossed_difference_ci(values[a], rows[a], columns[a], values[b], rows[b], columns[b])
        covered_pair += pair.low <= effects[1] - effects[2] <= pair.high
    assert 0.93 <= covered_mean / (4 * replications) <= 0.97
    assert 0.93 <= covered_difference / (6 * replications) <= 0.97
    assert 0.93 <= covered_pair / replications <= 0.97
