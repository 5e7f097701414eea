"""The style-controlled Bradley–Terry / Davidson fit (measures.stats.style_bt) against independent
fits on the same design matrix: statsmodels' logistic regression without intercept (Bradley–Terry)
and a written-out Davidson likelihood maximised by scipy."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import optimize

from measures.stats.pairwise import Comparison
from measures.stats.style_bt import estimable_covariates, style_controlled_ranking, style_fit

SYSTEMS = ["a", "b", "c", "d"]
MERIT = {"a": 0.8, "b": 0.2, "c": -0.1, "d": -0.9}


def _data(seed=0, n=400, ties=False):
    rng = np.random.default_rng(seed)
    comparisons, words, grades = [], [], []
    for i in range(n):
        left, right = rng.choice(SYSTEMS, size=2, replace=False)
        dw = float(rng.integers(-15, 16))
        dg = float(rng.normal(0, 2))
        eta = MERIT[left] - MERIT[right] + 0.05 * dw - 0.1 * dg
        p_left, p_right = np.exp(eta / 2), np.exp(-eta / 2)
        p_tie = 0.6 if ties else 0.0
        u = rng.random() * (p_left + p_right + p_tie)
        outcome = "left" if u < p_left else "right" if u < p_left + p_right else "tie"
        comparisons.append(Comparison(f"r{i % 12}", f"s{i % 30}", str(left), str(right), outcome))
        words.append(dw)
        grades.append(dg)
    return comparisons, {"words": words, "grade": grades}


def _design(comparisons, covariates, reference="a"):
    columns = [s for s in SYSTEMS if s != reference]
    x = np.zeros((len(comparisons), len(columns)))
    for row, c in enumerate(comparisons):
        if c.left in columns:
            x[row, columns.index(c.left)] += 1
        if c.right in columns:
            x[row, columns.index(c.right)] -= 1
    return columns, np.column_stack([x, *[np.asarray(v) for v in covariates.values()]])


def test_bradley_terry_with_covariates_equals_statsmodels_logit():
    comparisons, covariates = _data()
    fit = style_fit(comparisons, covariates)
    columns, x = _design(comparisons, covariates)
    y = np.array([c.outcome == "left" for c in comparisons], dtype=float)
    reference = sm.Logit(y, x).fit(disp=0, tol=1e-14, maxiter=200)
    # Coefficients and their standard errors.
    np.testing.assert_allclose(fit.coefficients, reference.params[len(columns) :], atol=1e-6)
    np.testing.assert_allclose(fit.coefficient_se, reference.bse[len(columns) :], atol=1e-6)
    # Strengths: statsmodels' (reference system at 0) centred.
    theta = {"a": 0.0, **dict(zip(columns, reference.params[: len(columns)], strict=True))}
    mean = np.mean(list(theta.values()))
    for i, system in enumerate(fit.systems):
        assert fit.strengths[i] == pytest.approx(theta[system] - mean, abs=1e-6)
    # The centred strengths' covariance is the linear map of statsmodels' covariance.
    full = np.zeros((4, 3))
    full[1:, :] = np.eye(3)
    centre = np.eye(4) - 1 / 4
    cov = centre @ full @ reference.cov_params()[:3, :3] @ full.T @ centre.T
    order = [SYSTEMS.index(s) for s in fit.systems]
    np.testing.assert_allclose(fit.strength_cov, cov[np.ix_(order, order)], atol=1e-6)
    assert fit.log_likelihood == pytest.approx(reference.llf, abs=1e-6)


def test_davidson_with_covariates_equals_a_written_out_likelihood():
    comparisons, covariates = _data(seed=3, ties=True)
    fit = style_fit(comparisons, covariates)
    columns, x = _design(comparisons, covariates)
    result = np.array([{"left": 1, "right": -1}.get(c.outcome, 0) for c in comparisons])

    def negative_loglik(params):
        eta = x @ params[:-1]
        nu = np.exp(params[-1])
        d = np.exp(eta / 2) + np.exp(-eta / 2) + nu
        return -np.sum(
            np.where(result == 1, eta / 2, np.where(result == -1, -eta / 2, params[-1])) - np.log(d)
        )

    reference = optimize.minimize(
        negative_loglik, np.zeros(x.shape[1] + 1), method="BFGS", options={"gtol": 1e-10}
    )
    assert fit.tie_log_nu == pytest.approx(reference.x[-1], abs=1e-5)
    np.testing.assert_allclose(fit.coefficients, reference.x[len(columns) : -1], atol=1e-5)
    assert -fit.log_likelihood == pytest.approx(reference.fun, abs=1e-8)


def test_the_ranking_beside_the_plain_one_with_coefficients_and_robustness():
    comparisons, covariates = _data(seed=5)
    result = style_controlled_ranking(comparisons, covariates, labels={"words": "length (words)"})
    assert result["model"] == "bradley_terry" and result["estimable"]
    words = result["covariates"][0]
    assert words["label"] == "length (words)" and words["estimable"]
    assert words["low"] < words["coefficient"] < words["high"]
    assert words["low"] > 0  # the simulated raters prefer longer texts
    assert [s["system"] for s in result["systems"]] == ["a", "b", "c", "d"]
    assert {s["plain_rank"] for s in result["systems"]} == {1, 2, 3, 4}
    robust = result["robustness"]
    assert robust["comparisons"]["dropped"] == 20 and robust["comparisons"]["changed"] in (True, False)
    assert robust["rater"]["dropped"] in {f"r{i}" for i in range(12)}


def test_equal_lengths_are_reported_as_not_estimable_never_a_crash():
    comparisons, covariates = _data(seed=2, n=120)
    covariates["words"] = [0.0] * len(comparisons)
    result = style_controlled_ranking(comparisons, covariates)
    words = {c["name"]: c for c in result["covariates"]}["words"]
    assert not words["estimable"] and "same value" in words["reason"]
    assert words["coefficient"] is None
    assert {c["name"]: c for c in result["covariates"]}["grade"]["estimable"]


def test_a_covariate_collinear_with_the_systems_is_not_estimable():
    comparisons, _ = _data(seed=4, n=100)
    # Each system's texts always have the same length: the length difference is a system contrast.
    length = {"a": 30, "b": 20, "c": 25, "d": 10}
    words = [float(length[c.left] - length[c.right]) for c in comparisons]
    from measures.stats.style_bt import _system_design

    kept, reasons = estimable_covariates(_system_design(comparisons)[1], {"words": words})
    assert kept == [] and "collinear" in reasons["words"]
    result = style_controlled_ranking(comparisons, {"words": words})
    assert not result["covariates"][0]["estimable"]


def test_bad_input_is_refused():
    comparisons, covariates = _data(n=10)
    with pytest.raises(ValueError, match="covariate words"):
        style_fit(comparisons, {"words": [1.0]})
    with pytest.raises(ValueError, match="at least one"):
        style_fit([], {})
