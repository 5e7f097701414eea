import numpy as np
import pytest
from scipy import stats

from measures.stats.rater_reliability import (
    ControlScore,
    mann_whitney_greater,
    planted_span_found,
    rater_reliability,
    z_scores,
)


@pytest.mark.parametrize("seed", range(5))
def test_mann_whitney_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    real = rng.integers(1, 6, 30)
    planted = rng.integers(1, 5, 9)
    u, p = mann_whitney_greater(real, planted)
    reference = stats.mannwhitneyu(real, planted, alternative="greater", method="asymptotic")
    assert u == pytest.approx(reference.statistic)
    assert p == pytest.approx(reference.pvalue, rel=1e-10)


def test_planted_span_overlap_rule():
    assert planted_span_found((10, 15), [(0, 3), (14, 20)])
    assert not planted_span_found((10, 15), [(0, 10), (15, 20)])
    assert planted_span_found((10, 10), [(8, 10)])
    assert not planted_span_found((10, 10), [])


def _rater(rng, name, *, sensible, n_real=40, share_planted=0.2):
    rows = []
    n_planted = round(n_real * share_planted / (1 - share_planted))
    real = {}
    for item in range(n_real):
        real[item] = int(np.clip(round(rng.normal(4, 0.8)), 1, 5)) if sensible else int(rng.integers(1, 6))
        rows.append(ControlScore(name, item, False, real[item]))
    for item in range(n_planted):
        score = int(np.clip(real[item] - rng.integers(1, 4), 1, 5)) if sensible else int(rng.integers(1, 6))
        rows.append(ControlScore(name, item, True, score))
    return rows


def test_random_raters_are_flagged_and_sensible_ones_are_not():
    wrong_sensible = wrong_random = 0
    seeds = 200
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        result = rater_reliability(_rater(rng, "s", sensible=True) + _rater(rng, "r", sensible=False))
        assert result["s"]["n_planted"] == 10
        wrong_sensible += result["s"]["unreliable"] is not False
        wrong_random += result["r"]["unreliable"] is not True
    # Measured with these seeds: 0 / 200 sensible raters flagged, 12 / 200 random raters not flagged
    # (a random rater passes the test with probability about alpha = 0.05).
    assert wrong_sensible / seeds <= 0.01
    assert wrong_random / seeds <= 0.10


def test_caught_share_and_undecided_flag_by_hand():
    rows = [ControlScore("a", i, False, 5) for i in range(4)] + [
        ControlScore("a", 0, True, 4),
        ControlScore("a", 1, True, 5),
        ControlScore("a", 2, True, 2),
    ]
    result = rater_reliability(rows, min_planted=10)["a"]
    assert result["caught"] == pytest.approx(2 / 3)
    assert result["unreliable"] is None
    assert result["mean_real"] == 5 and result["mean_planted"] == pytest.approx(11 / 3)
    assert rater_reliability(rows, min_planted=3)["a"]["unreliable"] is (result["p_value"] >= 0.05)
    with pytest.raises(ValueError, match="score 0"):
        rater_reliability([ControlScore("a", 0, False, float("nan"))])


def test_z_scores_match_scipy_and_skip_planted_items():
    rows = [ControlScore("a", i, False, s) for i, s in enumerate([1, 3, 4, 5])] + [
        ControlScore("a", 0, True, 1)
    ]
    rows += [ControlScore("b", i, False, 3) for i in range(3)]
    z = z_scores(rows)
    np.testing.assert_allclose([z[("a", i)] for i in range(4)], stats.zscore([1, 3, 4, 5]))
    assert z[("b", 0)] is None and len(z) == 7
