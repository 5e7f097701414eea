"""Intervals of crossed data (participants × sources): measures/stats/crossed.py.

References: statsmodels' two-way ANOVA (the moment estimators of a complete table), statsmodels'
REML with crossed variance components (the difference model on a balanced table), a one-way ANOVA
by hand, the variance of the mean measured over simulated studies, and a hypothesis property test
of the bounds. Coverage over Latin squares: test_crossed_coverage.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from measures.stats.crossed import (
    crossed_group_intervals,
    crossed_mean_ci,
    pair_components,
    variance_components,
)
from measures.stats.interval_methods import MIN_PARTICIPANTS, MIN_SOURCES, TOO_FEW

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


def test_one_participant_is_too_few_for_an_interval():
    values = np.array([1.0, 2.0, 4.0, 3.0, 5.0])
    interval = crossed_mean_ci(values, np.zeros(5), np.arange(5))
    assert interval.estimate == pytest.approx(3.0)
    assert interval.low is None and interval.high is None and interval.reason == TOO_FEW


def test_each_source_once_is_the_one_way_random_effects_interval():
    # 4 participants × 6 sources each, no source seen twice: the source variance cannot be told
    # from the residual, and the mean's interval is the one-way ANOVA one: mean ± t(R − 1) ·
    # sqrt(MS_between / N) (hand computation).
    rng = np.random.default_rng(3)
    rows = np.repeat(np.arange(4), 6)
    columns = np.arange(24)
    values = rng.normal(0, 0.7, 4)[rows] + rng.normal(0, 1, 24)
    participant_means = values.reshape(4, 6).mean(axis=1)
    ms_between = 6 * np.sum((participant_means - values.mean()) ** 2) / 3
    half = stats.t.ppf(0.975, 3) * np.sqrt(ms_between / 24)
    interval = crossed_mean_ci(values, rows, columns)
    assert interval.df == pytest.approx(3.0)
    assert (interval.low, interval.high) == pytest.approx(
        (values.mean() - half, values.mean() + half), rel=1e-9
    )


def test_pair_components_match_reml_on_a_balanced_table():
    # Every participant rates every source under both systems: balanced, so REML (statsmodels
    # MixedLM, crossed variance components) equals the ANOVA estimators the moment method gives.
    rng = np.random.default_rng(12)
    n_p, n_s = 6, 8
    p, s, g = (a.ravel() for a in np.meshgrid(np.arange(n_p), np.arange(n_s), np.arange(2), indexing="ij"))
    values = (
        0.3 * g
        + rng.normal(0, 0.8, n_p)[p]
        + rng.normal(0, 0.7, n_s)[s]
        + rng.normal(0, 0.5, (n_p, 2))[p, g]
        + rng.normal(0, 0.5, (n_s, 2))[s, g]
        + rng.normal(0, 0.4, p.size)
    )
    frame = pd.DataFrame({"y": values, "p": p.astype(str), "s": s.astype(str), "g": g, "one": 0})
    frame["pg"] = frame["p"] + ":" + frame["g"].astype(str)
    frame["sg"] = frame["s"] + ":" + frame["g"].astype(str)
    model = smf.mixedlm(
        "y ~ C(g)",
        frame,
        groups="one",
        re_formula="0",
        vc_formula={"p": "0 + C(p)", "s": "0 + C(s)", "pg": "0 + C(pg)", "sg": "0 + C(sg)"},
    )
    fit = model.fit(reml=True)
    reml = dict(zip(model.exog_vc.names, fit.vcomp, strict=True))
    mine = pair_components(values, p, s, g)
    assert mine.row == pytest.approx(reml["p"], rel=1e-3)
    assert mine.column == pytest.approx(reml["s"], rel=1e-3)
    assert mine.interaction == pytest.approx(reml["pg"], rel=1e-3)
    assert mine.column_interaction == pytest.approx(reml["sg"], rel=1e-3)
    assert mine.residual == pytest.approx(fit.scale, rel=1e-3)


def test_a_difference_uses_only_its_two_systems_answers():
    # A third system with wild answers changes neither the means nor the difference of the others.
    rng = np.random.default_rng(5)
    rows = np.repeat(np.arange(6), 30)
    columns = np.tile(np.arange(30), 6)
    system = (rows + columns) % 3
    values = rng.normal(0, 0.5, 6)[rows] + rng.normal(0, 0.5, 30)[columns] + rng.normal(0, 0.5, rows.size)
    means, differences = crossed_group_intervals(values, rows, columns, system)
    wild = values + np.where(system == 2, rng.normal(0, 5, rows.size), 0.0)
    means_wild, differences_wild = crossed_group_intervals(wild, rows, columns, system)
    assert differences[(0, 1)] == differences_wild[(0, 1)]
    assert means[0] == means_wild[0]
    assert differences[(0, 2)].se != differences_wild[(0, 2)].se


def test_the_pilot_of_issue_31_gets_intervals_inside_their_bounds():
    # 3 laypeople × 8 sources, Q3 accuracy 25 % and squared errors averaging 2.5: intervals that
    # stay in [0, 1] and [0, 16] (the crossed t interval gave [-10.9 %, 60.9 %] and [-0.112, 5.112]).
    rows = np.repeat(np.arange(3), 8)
    columns = np.tile(np.arange(8), 3)
    accuracy = np.zeros(24)
    accuracy[[0, 3, 9, 10, 17, 20]] = 1.0
    errors = np.where(accuracy == 1, 0.0, np.tile([1.0, 4.0, 9.0, 1.0, 0.0, 4.0, 1.0, 4.0], 3))
    share = crossed_mean_ci(accuracy, rows, columns, bounds=(0.0, 1.0))
    assert share.estimate == pytest.approx(0.25)
    assert 0.0 <= share.low < 0.25 < share.high <= 1.0
    mse = crossed_mean_ci(errors, rows, columns, bounds=(0.0, 16.0))
    assert 0.0 <= mse.low < mse.estimate < mse.high <= 16.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_participants=st.integers(1, 6),
    n_sources=st.integers(1, 12),
    n_systems=st.integers(1, 3),
    scale=st.sampled_from(["proportion", "likert", "mse"]),
    seed=st.integers(0, 2**32 - 1),
    missing=st.floats(0.0, 0.6),
)
def test_no_interval_leaves_its_bounds(n_participants, n_sources, n_systems, scale, seed, missing):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n_participants), n_sources)
    columns = np.tile(np.arange(n_sources), n_participants)
    systems = rng.integers(0, n_systems, rows.size)
    if scale == "proportion":
        bounds, values = (0.0, 1.0), rng.integers(0, 2, rows.size).astype(float)
    elif scale == "likert":
        bounds, values = (1.0, 5.0), rng.integers(1, 6, rows.size).astype(float)
    else:
        bounds, values = (0.0, 16.0), rng.choice([0.0, 1.0, 4.0, 9.0, 16.0], rows.size)
    values[rng.random(rows.size) < missing] = np.nan
    means, differences = crossed_group_intervals(values, rows, columns, systems, bounds=bounds)
    span = bounds[1] - bounds[0]
    for ci in means.values():
        assert bounds[0] <= ci.estimate <= bounds[1]
        if ci.low is None:
            assert ci.reason == TOO_FEW or ci.se is None
        else:
            assert bounds[0] <= ci.low <= ci.estimate <= ci.high <= bounds[1]
            assert ci.n_rows >= MIN_PARTICIPANTS and ci.n_columns >= MIN_SOURCES
    for ci in differences.values():
        if ci.low is not None:
            assert -span <= ci.low <= ci.estimate <= ci.high <= span


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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_indicator_share_equals_the_dense_residual(seed):
    # The expected residual SS per unit variance of an effect, ||(I − H) Z||²_F, computed from
    # cross-count tables: equal to pushing every indicator column through the fit densely.
    from measures.stats import crossed

    rng = np.random.default_rng(seed)
    n_rows, n_columns = 7, 40
    cells = [(r, c, g) for r in range(n_rows) for c in range(n_columns) for g in (0, 1)]
    rows, columns, groups = np.array([cell for cell in cells if rng.random() < 0.6]).T
    row = crossed._Effect("row", rows, n_rows)
    column = crossed._Effect("column", columns, n_columns)
    system = crossed._Effect("system", groups, 2)
    interaction = crossed._Effect("interaction", *crossed._compact(rows * 2 + groups))
    column_interaction = crossed._Effect("column_interaction", *crossed._compact(columns * 2 + groups))
    for factors, effect in (
        ([interaction, column], column_interaction),
        ([row, column_interaction], interaction),
        ([row, system, column], interaction),
        ([column_interaction], row),
    ):
        projector = crossed._Projector(factors)
        dense = float(np.sum(projector.residual(effect.indicator().toarray()) ** 2))
        assert projector.indicator_share(effect) == pytest.approx(dense, rel=1e-10, abs=1e-9)
