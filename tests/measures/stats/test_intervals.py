import tracemalloc

import numpy as np
import pytest
from scipy import stats

from measures.stats import intervals
from measures.stats.intervals import bootstrap_ci, bootstrap_mean_ci


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


def reference_mean_replicates(values, n_resamples, seed):
    """The obvious bootstrap of the mean: one resample of n indices at a time."""
    rng = np.random.default_rng(seed)
    return np.array(
        [values[rng.integers(0, values.size, size=values.size)].mean() for _ in range(n_resamples)]
    )


def test_continuous_values_resample_indices_like_the_obvious_loop_in_any_chunk_size(monkeypatch):
    values = np.random.default_rng(6).gamma(2.0, 3.0, size=700)  # all distinct: the index path
    reference = reference_mean_replicates(values, 300, 4)
    expected = np.percentile(reference, [5, 95])
    for chunk in (10_000_000, 7 * 700 + 1, 1):  # one block, blocks of 7 resamples, one per block
        monkeypatch.setattr(intervals, "MAX_CHUNK_ELEMENTS", chunk)
        np.testing.assert_allclose(
            intervals.bootstrap_mean_replicates(values, n_resamples=300, seed=4),
            reference,
            rtol=0,
            atol=1e-12,
        )
        mean, low, high = bootstrap_mean_ci(values, n_resamples=300, confidence=0.9, seed=4)
        assert mean == pytest.approx(values.mean(), rel=1e-15)
        assert (low, high) == pytest.approx(tuple(expected), abs=1e-12)


def test_likert_values_use_multinomial_counts_with_the_bootstrap_distribution():
    levels = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    values = np.random.default_rng(8).choice(levels, p=[0.1, 0.2, 0.3, 0.3, 0.1], size=500)
    replicates = intervals.bootstrap_mean_replicates(values, n_resamples=20_000, seed=2)
    # Documented path: how often each distinct level is drawn, one multinomial draw per resample.
    distinct, counts = np.unique(values, return_counts=True)
    drawn = np.random.default_rng(2).multinomial(values.size, counts / values.size, size=20_000)
    np.testing.assert_allclose(replicates, drawn @ distinct / values.size, rtol=0, atol=1e-12)
    # The bootstrap distribution of the mean has the sample mean as its mean and
    # sqrt(population variance of the sample / n) as its spread; 20 000 replicates pin both.
    spread = np.sqrt(values.var() / values.size)
    assert replicates.mean() == pytest.approx(values.mean(), abs=4 * spread / np.sqrt(20_000))
    assert replicates.std() == pytest.approx(spread, rel=0.03)
    # Same quantiles as the obvious index bootstrap, within Monte Carlo error.
    reference = reference_mean_replicates(values, 4000, 5)
    np.testing.assert_allclose(
        np.percentile(replicates, [2.5, 50, 97.5]),
        np.percentile(reference, [2.5, 50, 97.5]),
        atol=0.2 * spread,
    )


def test_likert_mean_of_400_000_answers_stays_within_memory():
    values = np.random.default_rng(9).integers(1, 6, size=400_000).astype(np.float64)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        mean, low, high = bootstrap_mean_ci(values, n_resamples=2000, seed=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20  # resampling indices at once would need 2000 × 400 000 × 8 B = 6.4 GB
    half_width = stats.norm.ppf(0.975) * values.std() / np.sqrt(values.size)
    assert mean == pytest.approx(values.mean())
    assert low == pytest.approx(mean - half_width, abs=0.1 * half_width)
    assert high == pytest.approx(mean + half_width, abs=0.1 * half_width)
    assert bootstrap_mean_ci(values, n_resamples=2000, seed=1) == (mean, low, high)


def test_continuous_values_are_resampled_in_bounded_chunks(monkeypatch):
    values = np.random.default_rng(10).normal(size=50_000)
    monkeypatch.setattr(intervals, "MAX_CHUNK_ELEMENTS", 250_000)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        replicates = intervals.bootstrap_mean_replicates(values, n_resamples=200, seed=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One block: 250 000 indices and as many values (4 MB); the whole matrix would be 160 MB.
    assert peak < 16 * 2**20
    np.testing.assert_allclose(replicates, reference_mean_replicates(values, 200, 0), rtol=0, atol=1e-12)


def test_percentile_interval_drops_undefined_replicates():
    replicates = np.array([np.nan, 1.0, 2.0, 3.0, 4.0, np.nan])
    assert intervals.percentile_interval(replicates, 0.5) == pytest.approx((1.75, 3.25))
    assert intervals.percentile_interval(np.array([np.nan, np.nan, 1.0]), 0.9) == (None, None)


def test_percentile_intervals_of_rows_equal_numpy_percentiles_of_each_rows_finite_values():
    rng = np.random.default_rng(6)
    replicates = rng.normal(size=(7, 41))
    replicates[1, [3, 9]] = np.nan  # two undefined replicates
    replicates[2, :30] = np.nan  # fewer than half defined: no interval
    replicates[3, 5] = np.nan  # same finite count as row 1 minus one
    replicates[4, :] = np.nan
    replicates[5, :20] = np.nan  # 21 of 41 defined: just enough
    lows, highs = intervals.percentile_intervals(replicates, 0.9)
    for row, low, high in zip(replicates, lows, highs, strict=True):
        finite = row[~np.isnan(row)]
        if finite.size < row.size / 2:
            assert (low, high) == (None, None)
        else:
            assert (low, high) == pytest.approx(tuple(np.percentile(finite, [5, 95])), abs=1e-12)
            # The same numbers as the one-row function, not close ones.
            assert (low, high) == intervals.percentile_interval(row, 0.9)
    assert lows[0] is not None and lows[5] is not None and lows[2] is None
    with pytest.raises(ValueError):
        intervals.percentile_intervals(replicates[0], 0.9)
