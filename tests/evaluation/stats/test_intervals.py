import numpy as np
import pytest
from scipy import stats

from evaluation.stats.intervals import bootstrap_ci, bootstrap_mean_ci


def test_mean_ci_contains_the_mean_and_is_deterministic_per_seed():
    values = np.random.default_rng(1).normal(3.0, 1.0, size=40)
    mean, low, high = bootstrap_mean_ci(values, n_resamples=500, seed=7)
    assert mean == pytest.approx(values.mean())
    assert low < mean < high
    assert bootstrap_mean_ci(values, n_resamples=500, seed=7) == (mean, low, high)
    assert bootstrap_mean_ci(values, n_resamples=500, seed=8) != (mean, low, high)


def test_mean_ci_width_matches_normal_theory_for_a_large_sample():
    # For n=400 the percentile bootstrap of the mean is close to mean ± z * s / sqrt(n).
    values = np.random.default_rng(2).normal(0.0, 2.0, size=400)
    mean, low, high = bootstrap_mean_ci(values, n_resamples=4000, confidence=0.9, seed=0)
    half_width = stats.norm.ppf(0.95) * values.std(ddof=1) / np.sqrt(values.size)
    assert low == pytest.approx(mean - half_width, abs=0.1 * half_width)
    assert high == pytest.approx(mean + half_width, abs=0.1 * half_width)


def test_mean_ci_small_and_missing_inputs():
    assert bootstrap_mean_ci([]) == (None, None, None)
    assert bootstrap_mean_ci([4.0]) == (4.0, None, None)
    assert bootstrap_mean_ci([4.0, float("nan")]) == (4.0, None, None)
    mean, low, high = bootstrap_mean_ci([1.0, float("nan"), 3.0, 5.0], n_resamples=200)
    assert mean == 3.0
    assert 1.0 <= low <= high <= 5.0


def test_unpaired_difference_of_means_matches_normal_theory():
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 1.0, size=300), rng.normal(0.0, 1.5, size=500)
    estimate, low, high = bootstrap_ci(
        lambda x, y, axis=-1: x.mean(axis=axis) - y.mean(axis=axis),
        a,
        b,
        paired=False,
        vectorized=True,
        n_resamples=4000,
    )
    half_width = stats.norm.ppf(0.975) * np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert estimate == pytest.approx(a.mean() - b.mean())
    assert low == pytest.approx(estimate - half_width, abs=0.1 * half_width)
    assert high == pytest.approx(estimate + half_width, abs=0.1 * half_width)


def test_degenerate_replicates_are_dropped_instead_of_poisoning_the_interval():
    # With 4 pairs, about 1.6% of resamples repeat one pair (Pearson r undefined); the interval
    # must still come from the finite replicates and lie in [-1, 1].
    x, y = [1.0, 2.0, 3.0, 4.0], [1.5, 1.0, 3.5, 3.0]

    def pearson(u, v):
        return stats.pearsonr(u, v).statistic

    estimate, low, high = bootstrap_ci(pearson, x, y, n_resamples=2000, seed=0)
    assert estimate == pytest.approx(stats.pearsonr(x, y).statistic)
    assert -1.0 <= low < estimate < high <= 1.0


def test_paired_requires_equal_lengths():
    with pytest.raises(ValueError):
        bootstrap_ci(lambda u, v: 0.0, [1, 2, 3], [1, 2])
