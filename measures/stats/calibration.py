"""How honest a judge's confidence is: confidence from K samples, expected calibration error,
multi-class Brier score and the reliability diagram, with intervals that resample sources.
Django-free.

A judge answers each question K times. Its answer is the modal one of the K samples (the first of
equals in sample order) and its **confidence** the share of samples that gave it (the vote share;
Potato's judge calibration). For an ordinal item the spread of the K coded samples is a second
reading: ``spread_confidence`` = 1 − sd / (half the scale's range), 1 when every sample agrees, 0
when half sit at each end.

Against the human consensus (the answer the judge never saw):

* **ECE** (Guo et al. 2017): ``n_bins`` equal-width bins over [0, 1] (bin i holds confidences in
  [i/B, (i+1)/B), the last bin also 1.0), ``ECE = Σ_b |B_b|/n · |accuracy(B_b) − confidence(B_b)|``;
  in [0, 1].
* **Brier score**, multi-class (Brier 1950): each answer's predicted distribution is the vote shares
  over the item's categories, ``BS = mean Σ_k (p_k − y_k)²`` with y the one-hot consensus; in [0, 2]
  (0 perfect). For two categories it is twice the binary Brier score.
* **Reliability diagram**: per non-empty bin its count, mean confidence and accuracy with a Wilson
  interval (scipy's binomtest), so every interval stays in [0, 1].

Intervals of ECE, Brier, accuracy and mean confidence are percentile bootstrap intervals that
resample *sources* (a source's answers move together); percentiles of replicates of a bounded
statistic stay within its bounds.

K = 1 gives every answer confidence 1: there is nothing to calibrate, and ``calibration`` raises
``CalibrationUnavailable`` saying so.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from measures.stats.intervals import percentile_interval

DEFAULT_BINS = 10
BINNING = "{bins} equal-width bins of the vote-share confidence over [0, 1] (the last bin holds 1.0)"


class CalibrationUnavailable(ValueError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """A calibration that cannot be computed, with the reason a page shows."""


@dataclass(frozen=True)
class JudgedAnswer:
    """One question the judge answered K times: its K samples (category keys or codes), the
    human consensus, the item's categories (the scale's levels, in order), and the source that
    clusters it."""

    source: Hashable
    samples: tuple[Hashable, ...]
    consensus: Hashable
    categories: tuple[Hashable, ...]


def vote_share(samples: Sequence[Hashable]) -> tuple[Hashable, float]:
    """(the modal sample — the first of equals in sample order —, its share of the samples)."""
    if not samples:
        raise ValueError("vote_share needs at least one sample")
    modal, count = Counter(samples).most_common(1)[0]
    return modal, count / len(samples)


def spread_confidence(values: Sequence[float], low: float, high: float) -> float:
    """1 − sd / ((high − low) / 2) of K coded ordinal samples: 1 when they agree, 0 at the widest
    spread the scale allows (the population sd of K samples is at most half its range)."""
    if not values:
        raise ValueError("spread_confidence needs at least one value")
    if high <= low:
        raise ValueError("the scale needs low < high")
    return float(max(0.0, 1.0 - statistics.pstdev(values) / ((high - low) / 2)))


def _bin_of(confidence: np.ndarray, n_bins: int) -> np.ndarray:
    return np.minimum((confidence * n_bins).astype(np.intp), n_bins - 1)


def _check(confidence: np.ndarray, correct: np.ndarray, n_bins: int) -> None:
    if confidence.shape != correct.shape:
        raise ValueError("confidence and correct need the same length")
    if confidence.size == 0:
        raise ValueError("no answers to calibrate")
    if ((confidence < 0) | (confidence > 1) | ~np.isfinite(confidence)).any():
        raise ValueError("confidences must lie in [0, 1]")
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")


def expected_calibration_error(
    confidence: Sequence[float] | np.ndarray,
    correct: Sequence[bool] | np.ndarray,
    *,
    n_bins: int = DEFAULT_BINS,
) -> float:
    """ECE over ``n_bins`` equal-width bins (see the module docstring)."""
    conf = np.asarray(confidence, dtype=np.float64)
    hit = np.asarray(correct, dtype=np.float64)
    _check(conf, hit, n_bins)
    bins = _bin_of(conf, n_bins)
    count = np.bincount(bins, minlength=n_bins)
    gap = np.abs(np.bincount(bins, hit, n_bins) - np.bincount(bins, conf, n_bins))
    return float(gap.sum() / count.sum())


def multiclass_brier(probabilities: np.ndarray, outcome: Sequence[int]) -> float:
    """mean Σ_k (p_k − y_k)² of rows of predicted distributions against category indices."""
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.zeros_like(p)
    y[np.arange(p.shape[0]), np.asarray(outcome, dtype=np.intp)] = 1.0
    return float(((p - y) ** 2).sum(axis=1).mean())


def reliability_bins(
    confidence: Sequence[float] | np.ndarray,
    correct: Sequence[bool] | np.ndarray,
    *,
    n_bins: int = DEFAULT_BINS,
    confidence_level: float = 0.95,
) -> list[dict[str, Any]]:
    """The reliability diagram's data: each non-empty bin's edges, count, mean confidence,
    accuracy and the accuracy's Wilson interval."""
    conf = np.asarray(confidence, dtype=np.float64)
    hit = np.asarray(correct, dtype=np.float64)
    _check(conf, hit, n_bins)
    bins = _bin_of(conf, n_bins)
    rows = []
    for b in range(n_bins):
        inside = bins == b
        n = int(inside.sum())
        if not n:
            continue
        k = int(hit[inside].sum())
        interval = stats.binomtest(k, n).proportion_ci(confidence_level=confidence_level, method="wilson")
        rows.append(
            {
                "low": b / n_bins,
                "high": (b + 1) / n_bins,
                "n": n,
                "confidence": float(conf[inside].mean()),
                "accuracy": k / n,
                "accuracy_low": float(max(0.0, interval.low)),
                "accuracy_high": float(min(1.0, interval.high)),
            }
        )
    return rows


def _arrays(answers: Sequence[JudgedAnswer]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(confidence, correct, Brier term, source code) per answer."""
    confidence = np.empty(len(answers))
    correct = np.empty(len(answers))
    brier = np.empty(len(answers))
    sources: dict[Hashable, int] = {}
    codes = np.empty(len(answers), dtype=np.intp)
    for i, answer in enumerate(answers):
        categories = list(answer.categories)
        if answer.consensus not in categories:
            raise ValueError(f"answer {i}: the consensus {answer.consensus!r} is not a category")
        unknown = [s for s in answer.samples if s not in categories]
        if unknown:
            raise ValueError(f"answer {i}: samples {unknown!r} are not categories")
        modal, share = vote_share(answer.samples)
        confidence[i] = share
        correct[i] = float(modal == answer.consensus)
        counts = Counter(answer.samples)
        p = np.array([counts[c] / len(answer.samples) for c in categories])
        brier[i] = multiclass_brier(p[None, :], [categories.index(answer.consensus)])
        codes[i] = sources.setdefault(answer.source, len(sources))
    return confidence, correct, brier, codes


def _estimate(estimate: float, replicates: np.ndarray, level: float) -> dict[str, float | None]:
    low, high = percentile_interval(replicates, level)
    return {"estimate": float(estimate), "low": low, "high": high}


def calibration(
    answers: Sequence[JudgedAnswer],
    *,
    n_bins: int = DEFAULT_BINS,
    n_resamples: int = 500,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """ECE, multi-class Brier score, accuracy and mean confidence of ``answers`` with percentile
    bootstrap intervals over sources, and the reliability diagram's bins. Raises
    CalibrationUnavailable when no answer has more than one sample."""
    if not answers:
        raise CalibrationUnavailable("no judge answer has a human consensus to compare with")
    if max(len(a.samples) for a in answers) < 2:
        raise CalibrationUnavailable(
            "the judge run has one sample per item (k = 1): every answer's vote share is 1, so there "
            "is no confidence to calibrate; run the judge with --samples 3 or more"
        )
    confidence, correct, brier, codes = _arrays(answers)
    n_sources = int(codes.max()) + 1
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(codes == g) for g in range(n_sources)]
    replicates = np.full((n_resamples, 4), np.nan)
    for r in range(n_resamples):
        drawn = rng.integers(0, n_sources, n_sources)
        rows = np.concatenate([members[g] for g in drawn])
        replicates[r] = (
            expected_calibration_error(confidence[rows], correct[rows], n_bins=n_bins),
            brier[rows].mean(),
            correct[rows].mean(),
            confidence[rows].mean(),
        )
    return {
        "n": int(confidence.size),
        "n_sources": n_sources,
        "samples": max(len(a.samples) for a in answers),
        "binning": BINNING.format(bins=n_bins),
        "n_bins": n_bins,
        "ece": _estimate(
            expected_calibration_error(confidence, correct, n_bins=n_bins), replicates[:, 0], confidence_level
        ),
        "brier": _estimate(float(brier.mean()), replicates[:, 1], confidence_level),
        "accuracy": _estimate(float(correct.mean()), replicates[:, 2], confidence_level),
        "mean_confidence": _estimate(float(confidence.mean()), replicates[:, 3], confidence_level),
        "reliability": reliability_bins(
            confidence, correct, n_bins=n_bins, confidence_level=confidence_level
        ),
        "n_resamples": n_resamples,
        "interval": f"{confidence_level:.0%} percentile bootstrap over sources",
    }


def consensus_of(values: Sequence[float], categories: Sequence[float]) -> float:
    """The humans' consensus on an ordinal item: the median of their coded answers, rounded to
    the nearest category (half-way rounds down, toward the lower code)."""
    if not values:
        raise ValueError("no human answer")
    median = statistics.median(values)
    return min(categories, key=lambda c: (abs(c - median), c))


__all__ = [
    "BINNING",
    "CalibrationUnavailable",
    "JudgedAnswer",
    "calibration",
    "consensus_of",
    "expected_calibration_error",
    "multiclass_brier",
    "reliability_bins",
    "spread_confidence",
    "vote_share",
]
