"""How well laypeople guess a finding's severity (protocol Table 2: MSE and accuracy vs the radiologist)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def severity_errors_per_answer(
    guesses: Sequence[float | None], references: Sequence[float | None]
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, aligned with the input: the squared error and the hit (1.0 when the guess is the
    reference severity, else 0.0), NaN where either side is missing (None/NaN: not answered, or no
    reference severity). For frames that keep one row per answer, whatever it answered."""
    if len(guesses) != len(references):
        raise ValueError("guesses and references must be aligned")
    guess = np.asarray(guesses, dtype=np.float64)  # None becomes NaN
    reference = np.asarray(references, dtype=np.float64)
    missing = np.isnan(guess) | np.isnan(reference)
    hits = np.where(missing, np.nan, (guess == reference).astype(np.float64))
    return (guess - reference) ** 2, hits


def severity_errors(
    guesses: Sequence[float | None], references: Sequence[float | None]
) -> tuple[np.ndarray, np.ndarray]:
    """Per usable pair: the squared error and the hit, as float arrays (severity_errors_per_answer
    without the pairs where either side is missing); their means are the MSE and the accuracy."""
    squared_errors, hits = severity_errors_per_answer(guesses, references)
    usable = ~np.isnan(hits)
    return squared_errors[usable], hits[usable]


def mse_and_accuracy(
    guesses: Sequence[float | None], references: Sequence[float | None]
) -> tuple[float | None, float | None, int]:
    """``(mse, accuracy, n)`` of severity guesses against reference severities, pair by pair
    (see severity_errors); ``n`` counts the pairs used. With no usable pair: ``(None, None, 0)``."""
    squared_errors, hits = severity_errors(guesses, references)
    if not squared_errors.size:
        return None, None, 0
    return float(squared_errors.mean()), float(hits.mean()), int(squared_errors.size)
