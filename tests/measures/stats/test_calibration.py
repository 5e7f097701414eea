"""Judge calibration (measures.stats.calibration) against independent references: scikit-learn's
multi-class Brier score and calibration curve, and the ECE written out as a loop over bins."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from measures.stats.calibration import (
    CalibrationUnavailable,
    JudgedAnswer,
    calibration,
    consensus_of,
    expected_calibration_error,
    multiclass_brier,
    reliability_bins,
    spread_confidence,
    vote_share,
)


def _ece_loop(confidence, correct, n_bins):
    total, n = 0.0, len(confidence)
    for b in range(n_bins):
        low, high = b / n_bins, (b + 1) / n_bins
        inside = [i for i, c in enumerate(confidence) if (low <= c < high) or (b == n_bins - 1 and c == 1.0)]
        if inside:
            accuracy = sum(correct[i] for i in inside) / len(inside)
            mean = sum(confidence[i] for i in inside) / len(inside)
            total += len(inside) / n * abs(accuracy - mean)
    return total


def test_ece_matches_a_written_out_loop_and_sklearns_curve():
    rng = np.random.default_rng(4)
    confidence = rng.choice([1 / 3, 2 / 3, 1.0, 0.5, 0.75], size=300)
    correct = rng.random(300) < confidence * 0.8
    for n_bins in (5, 10, 15):
        ece = expected_calibration_error(confidence, correct, n_bins=n_bins)
        assert ece == pytest.approx(_ece_loop(list(confidence), list(correct), n_bins), abs=1e-12)
    # The reliability bins are sklearn's uniform calibration curve (its non-empty bins).
    bins = reliability_bins(confidence, correct, n_bins=10)
    prob_true, prob_pred = calibration_curve(correct, confidence, n_bins=10, strategy="uniform")
    np.testing.assert_allclose([b["accuracy"] for b in bins], prob_true, atol=1e-12)
    np.testing.assert_allclose([b["confidence"] for b in bins], prob_pred, atol=1e-12)
    for b in bins:
        assert 0 <= b["accuracy_low"] <= b["accuracy"] <= b["accuracy_high"] <= 1


def test_perfectly_calibrated_and_overconfident_judges():
    assert expected_calibration_error([1.0] * 4, [True] * 4) == 0
    assert expected_calibration_error([1.0] * 4, [True, False, False, False]) == pytest.approx(0.75)


def test_multiclass_brier_matches_sklearn():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(5), size=50)
    y = rng.integers(0, 5, 50)
    expected = brier_score_loss(y, p, labels=list(range(5)), scale_by_half=False)
    assert multiclass_brier(p, y) == pytest.approx(expected, abs=1e-12)


def test_vote_share_and_spread():
    assert vote_share([3, 4, 3]) == (3, pytest.approx(2 / 3))
    assert vote_share([4, 3]) == (4, 0.5)  # first of equals
    assert spread_confidence([3, 3, 3], 1, 5) == 1
    assert spread_confidence([1, 5], 1, 5) == 0
    assert consensus_of([2, 3], [1, 2, 3, 4, 5]) == 2  # half-way rounds down
    assert consensus_of([4, 5, 5], [1, 2, 3, 4, 5]) == 5


def _answers(seed=0, n_sources=30):
    rng = np.random.default_rng(seed)
    answers = []
    for source in range(n_sources):
        for _ in range(3):
            truth = int(rng.integers(1, 6))
            samples = tuple(int(np.clip(truth + rng.integers(-1, 2), 1, 5)) for _ in range(3))
            answers.append(JudgedAnswer(source, samples, truth, (1, 2, 3, 4, 5)))
    return answers


def test_calibration_intervals_stay_in_bounds_and_bracket_the_estimate():
    result = calibration(_answers(), n_resamples=200, seed=2)
    assert result["n"] == 90 and result["n_sources"] == 30 and result["samples"] == 3
    assert "10 equal-width bins" in result["binning"]
    for name, (low, high) in {
        "ece": (0, 1),
        "brier": (0, 2),
        "accuracy": (0, 1),
        "mean_confidence": (0, 1),
    }.items():
        cell = result[name]
        assert low <= cell["low"] <= cell["estimate"] <= cell["high"] <= high, name
    assert sum(b["n"] for b in result["reliability"]) == 90


def test_one_sample_per_item_cannot_be_calibrated():
    answers = [JudgedAnswer(0, (3,), 3, (1, 2, 3, 4, 5))]
    with pytest.raises(CalibrationUnavailable, match="k = 1"):
        calibration(answers)
    with pytest.raises(CalibrationUnavailable):
        calibration([])
    with pytest.raises(ValueError, match="not a category"):
        calibration([JudgedAnswer(0, (3, 3), 7, (1, 2, 3, 4, 5))])
