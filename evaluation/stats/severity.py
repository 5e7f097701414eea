"""How well laypeople guess a finding's severity (protocol Table 2: MSE and accuracy vs the radiologist)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def mse_and_accuracy(
    guesses: Sequence[int | None], references: Sequence[int | None]
) -> tuple[float | None, float | None, int]:
    """``(mse, accuracy, n)`` of severity guesses against reference severities, pair by pair.

    Pairs where either side is missing (None/NaN: "don't know", or no reference severity) are
    ignored; ``n`` counts the pairs used. With no usable pair: ``(None, None, 0)``.
    """
    if len(guesses) != len(references):
        raise ValueError("guesses and references must be aligned")
    pairs = [
        (g, r) for g, r in zip(guesses, references, strict=True) if not _is_missing(g) and not _is_missing(r)
    ]
    if not pairs:
        return None, None, 0
    guess, reference = np.asarray(pairs, dtype=np.float64).T
    return float(np.mean((guess - reference) ** 2)), float(np.mean(guess == reference)), len(pairs)


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
