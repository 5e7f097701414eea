"""The power simulator against independent references: scipy's Wilcoxon and t distributions,
statsmodels' Holm and OLS, and the closed-form power of a paired t-test."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from evaluation.planning import power
from evaluation.planning.outcomes import OUTCOMES, Outcome
from measures.latin_square import LatinSquare
from tests.frozen_gc import frozen_gc

NORMAL = Outcome("normal", "An unbounded normal answer", "lay", "continuous", -1e9, 1e9)


def settings(**overrides) -> power.PowerSettings:
    values = dict(
        outcome=OUTCOMES["understanding"],
        participant_var=0.2,
        source_var=0.3,
        residual_var=0.5,
        baseline=3.0,
        effect=0.25,
        n_systems=3,
        n_simulations=200,
        seed=1,
    )
    values.update(overrides)
    return power.PowerSettings(**values)


def test_wilcoxon_matches_scipy_approx_with_ties_zeros_and_missing_sources():
    rng = np.random.default_rng(0)
    d = rng.integers(-4, 5, (40, 25)).astype(np.float64) / 4  # many ties and zeros
    d[rng.random(d.shape) < 0.15] = np.nan
    ours = power._wilcoxon_p(d)
    for row, p in zip(d, ours, strict=True):
        kept = row[~np.isnan(row)]
        expected = stats.wilcoxon(kept, zero_method="wilcox", correction=False, method="approx").pvalue
        assert p == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_holm_matches_statsmodels_and_skips_untestable_pairs():
    rng = np.random.default_rng(1)
    p = rng.random((30, 6)) ** 3
    p[::4, 2] = np.nan
    ours = power.holm(p)
    with frozen_gc():  # statsmodels collects garbage on every call
        for row, adjusted in zip(p, ours, strict=True):
            tested = ~np.isnan(row)
            expected = multipletests(row[tested], method="holm")[1]
            np.testing.assert_allclose(adjusted[tested], expected, rtol=1e-12)
            assert np.isnan(adjusted[~tested]).all()


@pytest.mark.filterwarnings("ignore:The design matrix is rank-deficient")
def test_mixed_model_p_equals_ols_with_participant_and_source_blocks():
    """The Latin square's windows split this design into two blocks of sources (OLS is then
    rank-deficient; statsmodels' pseudo-inverse still identifies the system contrasts)."""
    st = settings(n_systems=3, per_participant=6)
    y, part, src, sys_ = power.simulate_answers(st, 9, 12, system_means=[2.5, 3.0, 2.8], n_studies=1, seed=3)
    p = power._mixed_p(y, np.ones_like(y), part[None], src[None], sys_[None], 9, 12, 3)[0]
    frame = pd.DataFrame({"y": y[0], "p": part, "s": src, "k": sys_})
    fit = smf.ols("y ~ C(p) + C(s) + C(k)", frame).fit()
    expected = [
        fit.pvalues["C(k)[T.1]"],
        fit.pvalues["C(k)[T.2]"],
        fit.t_test("C(k)[T.1] - C(k)[T.2] = 0").pvalue,
    ]
    np.testing.assert_allclose(p, expected, rtol=1e-6)


def test_simulated_power_matches_the_closed_form_paired_t_test():
    """Two systems, normal answers, no participant or source effect: each source's difference
    of system means is N(δ, σ²·4/N) independently, so the paired t-test over M sources has the
    noncentral-t power that statsmodels computes."""
    n_participants, n_sources, sigma2, effect = 8, 20, 1.0, 0.5
    st = power.PowerSettings(
        outcome=NORMAL,
        participant_var=0.0,
        source_var=0.0,
        residual_var=sigma2,
        baseline=0.0,
        effect=effect,
        n_systems=2,
        n_simulations=4000,
        seed=7,
        mixed_model=False,
        test="t",
    )
    simulated = power.simulate_design(st, n_participants, n_sources)
    d_sd = math.sqrt(sigma2 * 4 / n_participants)
    expected = TTestPower().power(
        effect_size=effect / d_sd, nobs=n_sources, alpha=0.05, alternative="two-sided"
    )
    assert abs(simulated.power - expected) < 3 * simulated.power_se
    assert simulated.observed_difference == pytest.approx(effect, abs=0.02)


def test_the_latent_shift_gives_the_effect_on_the_observed_scale():
    st = settings(baseline=3.4, effect=0.25)  # close to the ceiling of a 1–4 scale
    baseline, shifted = power.latent_means(st)
    assert shifted - baseline > 0.25  # clipping at 4 needs a larger latent shift
    y, _, _, sys_ = power.simulate_answers(
        st, 30, 60, system_means=[baseline, shifted, baseline], n_studies=200, seed=2
    )
    observed = [y[:, sys_ == k].mean() for k in range(3)]
    assert observed[0] == pytest.approx(3.4, abs=0.01)
    assert observed[1] - observed[0] == pytest.approx(0.25, abs=0.01)
    assert set(np.unique(y)) <= {1.0, 2.0, 3.0, 4.0}


def test_an_effect_beyond_the_scale_is_refused():
    with pytest.raises(ValueError, match="strictly inside the scale"):
        power.latent_means(settings(baseline=3.9, effect=0.25))


def test_simulated_lay_studies_follow_radlays_latin_square():
    st = settings(n_systems=3, per_participant=4)
    _, part, src, sys_ = power.simulate_answers(st, 6, 12, system_means=[3, 3, 3], n_studies=1)
    square = LatinSquare(n_sources=12, n_systems=3, per_participant=4)
    for row in range(6):
        assert sorted(zip(src[part == row], sys_[part == row], strict=True)) == sorted(square.pairs(row))


def test_power_rises_with_participants_and_is_reproducible():
    st = settings(n_simulations=300, mixed_model=True)
    grid = power.power_grid(st, [6, 30], [12, 30], mixed_simulations=100)
    again = power.power_grid(st, [6, 30], [12, 30], mixed_simulations=100)
    assert [c.power for c in grid.cells] == [c.power for c in again.cells]
    assert grid.cell(30, 30).power > grid.cell(6, 12).power
    assert grid.cell(30, 30).mixed_power >= grid.cell(6, 12).mixed_power
    smallest = grid.smallest()
    assert smallest is None or smallest.power >= st.target


def test_null_effect_keeps_the_false_positive_rate_at_alpha():
    st = settings(effect=0.0, n_simulations=2000, n_systems=2, mixed_model=False)
    cell = power.simulate_design(st, 20, 30)
    assert cell.power <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)


def test_dropouts_add_partial_participants_and_their_block_rank():
    st = settings(dropout=0.2, n_simulations=100, mixed_model=True, per_participant=8)
    cell = power.simulate_design(st, 12, 24, mixed_simulations=20)
    assert cell.recruited == 15
    assert 0 <= cell.power <= 1 and cell.mixed_power is not None
    # the shortcut (completers' rank + answering drop-outs) equals the graph computation
    rng = np.random.default_rng(0)
    _, part, src, _ = power.simulate_answers(st, 15, 24, system_means=[3, 3, 3], n_studies=1)
    w = np.ones((1, part.size))
    w[0, part >= 12] = rng.random(int((part >= 12).sum())) < 0.5
    w[0, part == 14] = 0  # a drop-out who answered nothing
    completers = power._block_rank(
        np.ones((1, int((part < 12).sum()))), part[None, part < 12], src[None, part < 12], 15, 24
    )
    answering = len({int(p) for p in part[(part >= 12) & (w[0] > 0)]})
    assert power._block_rank(w, part[None], src[None], 15, 24)[0] == completers[0] + answering


def test_design_axis_is_whole_latin_square_cycles():
    assert power.design_axis(20, step=4, minimum=2) == [4, 8, 12, 16, 20]
    axis = power.design_axis(1000, step=3, minimum=2, points=20)
    assert len(axis) == 20 and all(v % 3 == 0 for v in axis) and axis[-1] == 999


@pytest.mark.parametrize(("baseline", "kind"), [(3.5, "understanding"), (2.0, "understanding"), (8.0, "sq")])
def test_simulated_answers_are_as_variable_as_the_pilot(baseline, kind):
    """Rounding and clipping change the variance; the latent scale puts it back to the fitted total."""
    outcome = OUTCOMES["understanding"] if kind == "understanding" else OUTCOMES["severity_squared_error"]
    st = settings(outcome=outcome, baseline=baseline, participant_var=0.1, source_var=0.15, residual_var=0.4)
    if kind == "sq":
        st = settings(
            outcome=outcome, baseline=baseline, participant_var=2.0, source_var=3.0, residual_var=9.0
        )
    total = st.participant_var + st.source_var + st.residual_var
    mean = power.latent_mean(st, baseline)
    y, *_ = power.simulate_answers(st, 40, 60, system_means=[mean, mean, mean], n_studies=400, seed=5)
    assert y.mean() == pytest.approx(baseline, abs=0.02 * max(1, baseline))
    assert y.var() == pytest.approx(total, rel=0.03)


def test_simulated_interaction_and_residuals_per_system_match_reml():
    # Answers simulated with a participant × system interaction of 0.3 and residual variances
    # 0.2 / 0.8: statsmodels' REML finds the interaction (crossed variance components with a
    # participant × system term, pooled residual 0.5) and each system's residual in its own fit.
    st = settings(
        outcome=NORMAL,
        baseline=0.0,
        participant_var=0.4,
        source_var=0.3,
        residual_var=0.5,
        interaction_var=0.3,
        residual_vars=(0.2, 0.8),
        n_systems=2,
    )
    y, participant, source, system = power.simulate_answers(
        st, 30, 40, system_means=[0.0, 0.0], n_studies=1, seed=3
    )
    frame = pd.DataFrame(
        {
            "y": y[0],
            "p": participant.astype(str),
            "s": source.astype(str),
            "g": system,
            "pg": [f"{a}:{b}" for a, b in zip(participant, system, strict=True)],
            "one": 0,
        }
    )
    model = smf.mixedlm(
        "y ~ C(g)",
        frame,
        groups="one",
        re_formula="0",
        vc_formula={"p": "0 + C(p)", "s": "0 + C(s)", "pg": "0 + C(pg)"},
    )
    fit = model.fit(reml=True)
    reml = dict(zip(model.exog_vc.names, fit.vcomp, strict=True))
    assert reml["pg"] == pytest.approx(0.3, abs=0.15)
    assert fit.scale == pytest.approx(0.5, abs=0.1)
    for g, expected in ((0, 0.2), (1, 0.8)):
        own = frame[frame["g"] == g]
        single = smf.mixedlm(
            "y ~ 1", own, groups="one", re_formula="0", vc_formula={"p": "0 + C(p)", "s": "0 + C(s)"}
        ).fit(reml=True)
        assert single.scale == pytest.approx(expected, abs=0.12)


def test_an_interaction_lowers_the_power_of_a_difference():
    base = settings(n_systems=2, n_simulations=400, effect=0.3)
    without = power.simulate_design(base, 16, 24, seed=7, mixed_simulations=0)
    with_interaction = power.simulate_design(
        settings(n_systems=2, n_simulations=400, effect=0.3, interaction_var=0.1),
        16,
        24,
        seed=7,
        mixed_simulations=0,
    )
    assert with_interaction.power < without.power - 0.05


def test_interaction_and_residuals_per_system_are_validated():
    with pytest.raises(ValueError):
        settings(interaction_var=-0.1)
    with pytest.raises(ValueError):
        settings(residual_vars=())
