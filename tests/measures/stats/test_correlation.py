import warnings

import numpy as np
import pytest
from scipy import stats

from measures.stats import correlation, intervals
from measures.stats.correlation import (
    bootstrap_correlations,
    correlate,
    correlate_columns,
    fisher_z_interval,
)

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}


def reference_replicates(x, y, name, n_resamples, seed):
    """The slow, obvious bootstrap: one scipy call per resample, indices drawn row by row."""
    rng = np.random.default_rng(seed)
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        for _ in range(n_resamples):
            rows = rng.integers(0, x.size, size=x.size)
            values.append(SCIPY[name](x[rows], y[rows]).statistic)
    return np.array(values, dtype=np.float64)


def reference_interval(replicates, confidence=0.95):
    finite = replicates[~np.isnan(replicates)]
    if finite.size < replicates.size / 2:
        return None, None
    tail = (1 - confidence) / 2
    return tuple(np.percentile(finite, [100 * tail, 100 * (1 - tail)]))


def samples():
    rng = np.random.default_rng(11)
    x = rng.normal(size=60)
    y = 0.4 * x + rng.normal(size=60)
    yield "continuous", x, y
    # Likert-like human answers against a metric with ties: many tied pairs on both sides.
    yield "ties", np.round(2 * x) / 2, np.clip(np.round(2 + y), 1, 5)
    # Seven pairs: a few percent of the resamples have a constant side (NaN replicates); seven
    # copies of 0.1 do not average to exactly 0.1, so constancy must be detected, not inferred.
    yield "tiny", np.array([0.1, 0.1, 0.1, 0.1, 0.7, 0.7, 0.3]), np.array([1.1, 3.0, 2.0, 1.1, 5.0, 1.1, 2.0])


@pytest.mark.parametrize("label,x,y", list(samples()), ids=[sample[0] for sample in samples()])
def test_replicates_and_intervals_equal_a_scipy_loop_over_the_same_resamples(label, x, y):
    replicates = bootstrap_correlations(x, y, n_resamples=400, seed=3)
    records = {r["method"]: r for r in correlate(x, y, n_resamples=400, seed=3, confidence=0.9)}
    for name in SCIPY:
        reference = reference_replicates(x, y, name, 400, 3)
        np.testing.assert_array_equal(np.isnan(replicates[name]), np.isnan(reference))
        np.testing.assert_allclose(replicates[name], reference, rtol=0, atol=1e-12, equal_nan=True)
        low, high = reference_interval(reference, 0.9)
        assert records[name]["ci_low"] == pytest.approx(low, abs=1e-12)
        assert records[name]["ci_high"] == pytest.approx(high, abs=1e-12)
        assert records[name]["r"] == pytest.approx(SCIPY[name](x, y).statistic, abs=1e-15)
    if label == "tiny":
        assert np.isnan(replicates["pearson"]).any()


def test_chunked_resamples_and_kendall_fallback_give_the_same_replicates(monkeypatch):
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=40), 1)
    y = np.round(x + rng.normal(size=40))
    whole = bootstrap_correlations(x, y, n_resamples=150, seed=9)
    # Blocks of 3 resamples, and too many distinct pairs for Kendall's sign matrix: the loop path.
    monkeypatch.setattr(intervals, "MAX_CHUNK_ELEMENTS", 3 * 40 + 5)
    monkeypatch.setattr(correlation, "_KENDALL_MATRIX_MAX_PAIRS", 10)
    chunked = bootstrap_correlations(x, y, n_resamples=150, seed=9)
    for name in SCIPY:
        np.testing.assert_allclose(chunked[name], whole[name], rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        chunked["kendall"], reference_replicates(x, y, "kendall", 150, 9), rtol=0, atol=1e-12
    )


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
        low, high = reference_interval(
            reference_replicates(metric[keep], human[keep], record["method"], 300, 1)
        )
        assert (record["ci_low"], record["ci_high"]) == pytest.approx((low, high), abs=1e-12)
    assert correlate(metric, human, n_resamples=300, seed=1) == records
    assert correlate(metric, human, n_resamples=300, seed=2) != records


def test_interval_contains_the_estimate_on_typical_study_data():
    # 160 simplifications: a continuous metric against mean Likert answers of three raters.
    rng = np.random.default_rng(21)
    metric = rng.normal(10, 3, size=160)
    answers = np.clip(np.round(3 + 0.3 * (metric[:, np.newaxis] - 10) + rng.normal(size=(160, 3))), 1, 5)
    for record in correlate(metric, answers.mean(axis=1)):
        assert record["ci_low"] < record["r"] < record["ci_high"]
        assert record["ci_low"] >= -1 and record["ci_high"] <= 1


def test_pearson_interval_is_close_to_fisher_z_for_a_large_sample():
    rng = np.random.default_rng(4)
    x = rng.normal(size=300)
    y = 0.5 * x + rng.normal(size=300)
    (record,) = correlate(x, y, method_names=("pearson",), n_resamples=2000)
    z, se = np.arctanh(record["r"]), 1 / np.sqrt(300 - 3)
    low, high = np.tanh(z - 1.96 * se), np.tanh(z + 1.96 * se)
    assert record["ci_low"] == pytest.approx(low, abs=0.03)
    assert record["ci_high"] == pytest.approx(high, abs=0.03)


def test_mostly_degenerate_resamples_give_no_interval():
    # Each side has one odd value out; a resample missing either one is constant on that side,
    # which happens with probability 1 - P(both drawn) ≈ 0.58: fewer than half are finite.
    x, y = [0.0, 0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0, 0.0]
    assert np.isnan(reference_replicates(np.array(x), np.array(y), "pearson", 500, 0)).mean() > 0.5
    for record in correlate(x, y, n_resamples=500):
        assert record["r"] == pytest.approx(SCIPY[record["method"]](x, y).statistic)
        assert record["ci_low"] is None and record["ci_high"] is None


def test_too_few_pairs_or_constant_input_give_no_correlation():
    for record in correlate([1.0, 2.0, np.nan, 4.0], [1.0, 2.0, 3.0, np.nan]):
        assert record == {
            "method": record["method"],
            "r": None,
            "p_value": None,
            "ci_low": None,
            "ci_high": None,
            "n": 2,
            "interval": "bootstrap",
            "support": [-1.0, 1.0],
        }
    (record,) = correlate([2.0, 2.0, 2.0, 2.0], [1.0, 2.0, 3.0, 4.0], method_names=("spearman",))
    assert record["r"] is None and record["n"] == 4


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError):
        correlate([1, 2, 3], [1, 2, 3], method_names=("distance",))
    with pytest.raises(ValueError):
        bootstrap_correlations(np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]))


def test_large_samples_get_the_fisher_z_interval_which_agrees_with_the_bootstrap():
    # Reference: the paired percentile bootstrap of the same data (forced by a huge threshold).
    rng = np.random.default_rng(3)
    n = 5000
    x = rng.normal(size=n)
    y = np.round(np.clip((0.5 * x + np.sqrt(0.75) * rng.normal(size=n)) * 0.8 + 2.5, 1, 4))
    fisher = correlate(x, y, bootstrap_max_pairs=n - 1)
    bootstrap = correlate(x, y, n_resamples=1000, bootstrap_max_pairs=n)
    for f, b in zip(fisher, bootstrap, strict=True):
        assert f["interval"] == "fisher_z" and b["interval"] == "bootstrap"
        assert f["r"] == b["r"]
        assert f["ci_low"] == pytest.approx(b["ci_low"], abs=0.01)
        assert f["ci_high"] == pytest.approx(b["ci_high"], abs=0.01)
        assert f["ci_low"] < f["r"] < f["ci_high"]


def test_fisher_z_interval_by_hand():
    # Pearson r = 0.5 on 103 pairs: atanh(0.5) ± 1.959964 / 10.
    low, high = fisher_z_interval("pearson", 0.5, 103)
    z = np.arctanh(0.5)
    assert (low, high) == pytest.approx((np.tanh(z - 0.1959964), np.tanh(z + 0.1959964)), abs=1e-7)
    # Spearman (Bonett & Wright 2000): SE = sqrt((1 + r²/2) / (n − 3)).
    low, high = fisher_z_interval("spearman", 0.5, 103)
    se = np.sqrt(1.125) / 10
    assert (low, high) == pytest.approx((np.tanh(z - 1.959964 * se), np.tanh(z + 1.959964 * se)), abs=1e-7)


def study_columns(n=80):
    """Per-text metrics against human measures as the analysis has them: continuous metrics (one
    with missing values, one constant), Likert means with different missing rows, one measure
    with only a few rows (fewer than three pairs with some metrics)."""
    rng = np.random.default_rng(8)
    base = rng.normal(size=n)
    metrics = {
        # First: scipy's spearmanr of a matrix answers one NaN when its first column is constant.
        "constant": np.full(n, 2.0),
        "fkgl": base + rng.normal(scale=0.5, size=n),
        "ari": np.round(base * 3),
        "smog": np.where(rng.random(n) < 0.3, np.nan, base + rng.normal(size=n)),
    }
    likert = np.clip(np.round(3 + base + rng.normal(size=n)), 1, 5)
    measures = {
        "correctness": likert,
        "understanding": np.where(
            np.arange(n) % 5 == 0, np.nan, np.round(2 * likert + rng.normal(size=n)) / 2
        ),
        "helpfulness": np.where(np.arange(n) % 5 == 0, np.nan, np.clip(np.round(likert - 2), -1, 2)),
        "few": np.where(np.arange(n) < 4, likert, np.nan),
    }
    return metrics, measures


def assert_same_records(got, expected):
    assert [(r["method"], r["n"], r["interval"]) for r in got] == [
        (r["method"], r["n"], r["interval"]) for r in expected
    ]
    for a, b in zip(got, expected, strict=True):
        for key in ("r", "p_value", "ci_low", "ci_high"):
            assert (a[key] is None) == (b[key] is None), (key, a, b)
            if b[key] is not None:
                assert a[key] == pytest.approx(b[key], rel=1e-12, abs=1e-12), (key, a, b)


@pytest.mark.parametrize("bootstrap_max_pairs", [5000, 50])
def test_correlate_columns_equals_correlate_on_every_pair(bootstrap_max_pairs):
    metrics, measures = study_columns()
    table = correlate_columns(
        metrics, measures, n_resamples=300, seed=5, confidence=0.9, bootstrap_max_pairs=bootstrap_max_pairs
    )
    assert list(table) == [(m, h) for m in metrics for h in measures]
    for (metric, measure), records in table.items():
        expected = correlate(
            metrics[metric],
            measures[measure],
            n_resamples=300,
            seed=5,
            confidence=0.9,
            bootstrap_max_pairs=bootstrap_max_pairs,
        )
        assert_same_records(records, expected)
    # Some pairs are undefined (constant side, fewer than three pairs), some use the Fisher-z
    # interval when the threshold is low: both paths are covered.
    assert table[("constant", "correctness")][0]["r"] is None
    assert table[("fkgl", "few")][0]["r"] is not None and table[("smog", "few")][0]["n"] < 4


def test_correlate_columns_bootstrap_equals_a_scipy_loop_over_the_same_resamples():
    metrics, measures = study_columns(n=40)
    keep = ~(np.isnan(metrics["smog"]) | np.isnan(measures["understanding"]))
    x, y = metrics["smog"][keep], measures["understanding"][keep]
    records = correlate_columns(
        {"smog": metrics["smog"]}, {"understanding": measures["understanding"]}, n_resamples=200, seed=2
    )
    for record in records[("smog", "understanding")]:
        low, high = reference_interval(reference_replicates(x, y, record["method"], 200, 2))
        assert (record["ci_low"], record["ci_high"]) == pytest.approx((low, high), abs=1e-12)
        assert record["r"] == pytest.approx(SCIPY[record["method"]](x, y).statistic, abs=1e-15)
        assert record["p_value"] == pytest.approx(SCIPY[record["method"]](x, y).pvalue, rel=1e-12)


def test_correlate_columns_blocks_and_kendall_paths_do_not_change_the_numbers(monkeypatch):
    metrics, measures = study_columns(n=60)
    whole = correlate_columns(metrics, measures, n_resamples=150, seed=9)
    # Blocks of a few resamples, one measure per Kendall product, and the per-pair resampler.
    monkeypatch.setattr(intervals, "MAX_CHUNK_ELEMENTS", 200)
    monkeypatch.setattr(correlation, "_KENDALL_STACK_VALUES", 1)
    assert correlate_columns(metrics, measures, n_resamples=150, seed=9) == whole
    monkeypatch.setattr(correlation, "_KENDALL_MATRIX_MAX_PAIRS", 10)
    for pair, records in correlate_columns(metrics, measures, n_resamples=150, seed=9).items():
        assert_same_records(records, whole[pair])


def test_correlate_columns_rejects_misaligned_columns():
    with pytest.raises(ValueError):
        correlate_columns({"a": [1.0, 2.0, 3.0]}, {"b": [1.0, 2.0]})
    with pytest.raises(ValueError):
        correlate_columns({"a": [1.0, 2.0, 3.0]}, {"b": [1.0, 2.0, 3.0]}, method_names=("distance",))


def test_pearson_of_many_pairs_equals_scipy_pearsonr_along_an_axis():
    from measures.stats.correlation import _pearson_pairs

    rng = np.random.default_rng(1)
    n = 500
    xs = {f"m{i}": rng.normal(size=n) * 10**i + (rng.integers(0, 5, n) if i % 2 else 0) for i in range(4)}
    xs["constant"] = np.full(n, 3.0)
    ys = {f"h{j}": rng.integers(1, 6, n).astype(float) + 0.3 * xs["m0"] * (j == 1) for j in range(3)}
    pairs = [(m, h) for m in xs for h in ys]
    r, p = _pearson_pairs(xs, ys, pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        expected = stats.pearsonr(
            np.stack([xs[m] for m, _ in pairs]), np.stack([ys[h] for _, h in pairs]), axis=1
        )
    np.testing.assert_array_equal(r, expected.statistic)
    np.testing.assert_array_equal(p, expected.pvalue)
    assert np.isnan(r[pairs.index(("constant", "h0"))])
