import numpy as np
import pytest
from scipy import stats

from evaluation.stats.correlation import correlate


def test_correlations_equal_scipy_after_dropping_missing_pairs():
    rng = np.random.default_rng(0)
    metric = rng.normal(size=30)
    human = 0.6 * metric + rng.normal(scale=0.8, size=30)
    metric[[2, 7]] = np.nan
    human[11] = np.nan
    keep = ~(np.isnan(metric) | np.isnan(human))
    records = correlate(list(metric), list(human), n_resamples=300, seed=1)
    references = {
        "pearson": stats.pearsonr(metric[keep], human[keep]),
        "spearman": stats.spearmanr(metric[keep], human[keep]),
        "kendall": stats.kendalltau(metric[keep], human[keep]),
    }
    assert [r["method"] for r in records] == ["pearson", "spearman", "kendall"]
    for record in records:
        reference = references[record["method"]]
        assert record["n"] == 27
        assert record["r"] == pytest.approx(reference.statistic)
        assert record["p_value"] == pytest.approx(reference.pvalue)
        assert record["ci_low"] < record["r"] < record["ci_high"]
    assert correlate(metric, human, n_resamples=300, seed=1) == records
    assert correlate(metric, human, n_resamples=300, seed=2) != records


def test_pearson_interval_is_close_to_fisher_z_for_a_large_sample():
    rng = np.random.default_rng(4)
    x = rng.normal(size=300)
    y = 0.5 * x + rng.normal(size=300)
    (record,) = correlate(x, y, method_names=("pearson",), n_resamples=2000)
    z, se = np.arctanh(record["r"]), 1 / np.sqrt(300 - 3)
    low, high = np.tanh(z - 1.96 * se), np.tanh(z + 1.96 * se)
    assert record["ci_low"] == pytest.approx(low, abs=0.03)
    assert record["ci_high"] == pytest.approx(high, abs=0.03)


def test_too_few_pairs_or_constant_input_give_no_correlation():
    for record in correlate([1.0, 2.0, np.nan, 4.0], [1.0, 2.0, 3.0, np.nan]):
        assert record == {
            "method": record["method"],
            "r": None,
            "p_value": None,
            "ci_low": None,
            "ci_high": None,
            "n": 2,
        }
    (record,) = correlate([2.0, 2.0, 2.0, 2.0], [1.0, 2.0, 3.0, 4.0], method_names=("spearman",))
    assert record["r"] is None and record["n"] == 4


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError):
        correlate([1, 2, 3], [1, 2, 3], method_names=("distance",))
