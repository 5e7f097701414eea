"""Judge–human agreement against the statistics libraries, on constructed data whose agreement is
known (identical raters, a shifted rater, hand-counted rankings and severity errors)."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from judging.agreement import (
    AgreementInputs,
    human_ceiling,
    icc2_1,
    judge_agreement,
    kappa_quadratic,
    lay_severity,
    paired_agreement,
    system_ranking,
)

RNG = np.random.default_rng(7)


def _long(values: dict[str, np.ndarray], field: str = "correctness", per_source: int = 2) -> pd.DataFrame:
    rows = []
    for rater, vector in values.items():
        for unit, value in enumerate(vector):
            rows.append(
                {
                    "rater": rater,
                    "unit": f"t{unit}",
                    "source": unit // per_source,
                    "field": field,
                    "value": float(value),
                }
            )
    return pd.DataFrame(rows)


def test_a_judge_identical_to_the_radiologist_agrees_perfectly():
    human = RNG.integers(1, 6, size=40).astype(float)
    result = paired_agreement(human, human, np.arange(40) // 2, n_resamples=50)
    for name in ("alpha_ordinal", "alpha_interval", "kappa_quadratic", "icc", "spearman", "kendall"):
        assert result[name]["estimate"] == pytest.approx(1.0), name
    assert result["n"] == 40 and result["n_sources"] == 20


def test_the_icc_of_exact_agreement_is_one_not_a_rounding_error_above():
    # Both raters score 0.7 and 0.1: an error sum of squares taken as total - units - raters fell a
    # rounding error below zero and lifted ICC(2,1) above 1 (the interval-bounds property test).
    value = icc2_1(np.array([0.7, 0.1]), np.array([0.7, 0.1]))
    assert value <= 1.0 and value == pytest.approx(1.0)


def test_statistics_match_the_libraries_on_noisy_ratings():
    human = RNG.integers(1, 6, size=60)
    judge = np.clip(human + RNG.integers(-1, 2, size=60), 1, 5)
    result = paired_agreement(judge, human, np.arange(60) // 3, n_resamples=200, seed=3)
    data = np.vstack([judge, human]).astype(float)
    assert result["alpha_interval"]["estimate"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    )
    assert result["alpha_ordinal"]["estimate"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
        )
    )
    assert result["kappa_quadratic"]["estimate"] == pytest.approx(
        cohen_kappa_score(judge, human, labels=[1, 2, 3, 4, 5], weights="quadratic")
    )
    long = pd.DataFrame(
        {
            "unit": list(range(60)) * 2,
            "rater": ["judge"] * 60 + ["human"] * 60,
            "score": np.concatenate([judge, human]),
        }
    )
    import pingouin  # with xarray: imported by the worker that runs this, not at collection

    icc = pingouin.intraclass_corr(long, targets="unit", raters="rater", ratings="score").set_index("Type")
    assert result["icc"]["estimate"] == pytest.approx(icc.loc["ICC(A,1)", "ICC"])
    assert result["spearman"]["estimate"] == pytest.approx(stats.spearmanr(judge, human).statistic)
    assert result["kendall"]["estimate"] == pytest.approx(stats.kendalltau(judge, human).statistic)
    for name in ("alpha_interval", "kappa_quadratic", "icc", "spearman", "kendall"):
        cell = result[name]
        assert cell["low"] < cell["estimate"] < cell["high"], name


def test_half_point_medians_are_weighted_on_the_half_point_grid():
    # A judge one half point above the radiologist everywhere: quadratic κ on the half-point grid is
    # the κ of integers 2·value on the 2..10 grid.
    human = RNG.integers(1, 5, size=30).astype(float)
    judge = human + 0.5
    result = paired_agreement(judge, human, np.arange(30), n_resamples=10)
    expected = cohen_kappa_score(
        (2 * judge).astype(int), (2 * human).astype(int), labels=list(range(2, 11)), weights="quadratic"
    )
    assert result["kappa_quadratic"]["estimate"] == pytest.approx(expected)
    assert result["spearman"]["estimate"] == pytest.approx(1.0)


def test_the_bootstrap_resamples_whole_sources():
    # Two sources disagree completely inside, the others agree: an interval over units would be much
    # narrower than one over sources, and a source's two units always move together.
    human = np.array([1, 5, 2, 4, 3, 3, 4, 2], dtype=float)
    judge = np.array([1, 5, 2, 4, 3, 3, 2, 4], dtype=float)
    sources = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    result = paired_agreement(judge, human, sources, n_resamples=400, seed=1)
    # With 4 sources, a resample draws source 3 (the disagreeing one) every time with probability
    # (1/4)^4 and never with (3/4)^4 ≈ 0.32: perfect agreement is inside the interval.
    assert result["spearman"]["high"] == pytest.approx(1.0)
    assert result["n_sources"] == 4


def test_several_radiologists_give_a_mean_comparison_and_a_ceiling():
    a = RNG.integers(1, 6, size=30)
    b = np.clip(a + RNG.integers(-1, 2, size=30), 1, 5)
    human = _long({"A": a, "B": b})
    judge = _long({"judge": a}).drop(columns="rater")
    result = judge_agreement(AgreementInputs(human=human, judge=judge), n_resamples=20)
    comparisons = [r["comparison"] for r in result["per_field"]]
    assert comparisons == ["radiologist A", "radiologist B", "radiologists' mean"]
    vs_a = result["per_field"][0]
    assert vs_a["alpha_interval"]["estimate"] == pytest.approx(1.0)
    mean_row = result["per_field"][2]
    assert mean_row["spearman"]["estimate"] == pytest.approx(stats.spearmanr(a, (a + b) / 2).statistic)
    (ceiling,) = human_ceiling(AgreementInputs(human=human, judge=judge))
    assert ceiling["alpha_interval"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.vstack([a, b]).astype(float), level_of_measurement="interval")
    )
    assert ceiling["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5], weights="quadratic")
    )
    assert result["summary"]["against"] == "radiologists' mean"


def test_one_radiologist_has_no_mean_row_and_no_ceiling():
    a = RNG.integers(1, 6, size=10)
    result = judge_agreement(
        AgreementInputs(human=_long({"A": a}), judge=_long({"j": a}).drop(columns="rater")), n_resamples=10
    )
    assert [r["comparison"] for r in result["per_field"]] == ["radiologist A"]
    assert result["human_ceiling"] == []
    assert result["summary"]["against"] == "the radiologist"


def test_system_ranking_counts_pairs_with_the_same_conclusion():
    # Three systems; humans order them x > y > z, the judge x > z > y.
    text_systems = pd.DataFrame({"unit": ["t0", "t1", "t2"], "system": ["x", "y", "z"]})
    human = _long({"A": np.array([5, 3, 1])}, per_source=3)
    judge = _long({"j": np.array([4, 1, 2])}, per_source=3).drop(columns="rater")
    (row,) = system_ranking(AgreementInputs(human=human, judge=judge, text_systems=text_systems))
    assert row["pairs_total"] == 3
    assert row["pairs_same"] == 2  # x>y and x>z agree, y>z does not
    assert row["kendall_tau"] == pytest.approx(stats.kendalltau([4, 1, 2], [5, 3, 1]).statistic)
    assert row["kendall_tau"] == pytest.approx(1 / 3)
    # A text shared by two systems counts for both.
    shared = pd.DataFrame({"unit": ["t0", "t0", "t1"], "system": ["x", "y", "z"]})
    (row,) = system_ranking(
        AgreementInputs(
            human=_long({"A": np.array([5, 1])}, per_source=2),
            judge=_long({"j": np.array([5, 1])}, per_source=2).drop(columns="rater"),
            text_systems=shared,
        )
    )
    assert {s["system"]: s["human_mean"] for s in row["systems"]} == {"x": 5.0, "y": 5.0, "z": 1.0}
    # x = y is a tie for both: the same conclusion.
    assert row["pairs_same"] == 3


def test_lay_severity_before_and_after_by_hand():
    columns = ["source", "phase", "system", "guess", "reference"]
    judge = pd.DataFrame(
        [
            (1, "original", None, 3, 5),  # error 2
            (2, "original", None, 4, 4),  # hit
            (1, "assisted", "x", 5, 5),
            (1, "assisted", "y", 4, 5),
            (2, "assisted", "x", 4, 4),
            (2, "assisted", "y", None, 4),  # no guess: left out
        ],
        columns=columns,
    )
    humans = pd.DataFrame([(1, "original", None, 1, 5), (1, "assisted", "x", 5, 5)], columns=columns)
    result = lay_severity(
        AgreementInputs(human=pd.DataFrame(), judge=pd.DataFrame(), lay_judge=judge, lay_humans=humans)
    )
    assert result["judge"]["original"] == {"mse": 2.0, "accuracy": 0.5, "n": 2, "by_system": {}}
    assert result["judge"]["assisted"]["mse"] == pytest.approx(1 / 3)
    assert result["judge"]["assisted"]["accuracy"] == pytest.approx(2 / 3)
    assert result["judge"]["assisted"]["by_system"]["y"] == {"mse": 1.0, "accuracy": 0.0, "n": 1}
    assert result["laypeople"]["original"]["mse"] == 16.0
    assert result["laypeople"]["assisted"]["accuracy"] == 1.0


def test_pairwise_agreement_of_two_constant_vectors_is_undefined_not_an_error():
    ones = np.ones(6)
    result = paired_agreement(ones, ones, np.arange(6), n_resamples=10)
    assert result["spearman"]["estimate"] is None
    assert result["alpha_interval"]["estimate"] is None
    assert list(itertools.chain(result)) == [
        "n",
        "n_sources",
        "alpha_ordinal",
        "alpha_interval",
        "kappa_quadratic",
        "icc",
        "spearman",
        "kendall",
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fast_kappa_is_scikit_learns(seed):
    rng = np.random.default_rng(seed)
    human = rng.integers(2, 11, size=50) / 2  # half points 1 … 5
    judge = np.clip(human + rng.integers(-2, 3, size=50) / 2, 1, 5)
    expected = cohen_kappa_score(
        (2 * judge).astype(int), (2 * human).astype(int), labels=list(range(2, 11)), weights="quadratic"
    )
    assert kappa_quadratic(judge, human) == pytest.approx(expected)
