"""The style-controlled rankings of a study's pairwise answers and of its lay most/least derived
pairs (measures.stats.style_bt), beside the plain ones. Django-free: the caller passes the texts.

Each comparison's covariates are the left text's minus the right text's: its length in words
(whitespace-separated, as the pairwise selector counts them) and its reading grade by the
protocol's readability metric, FKGL (measures.metrics.readability, textstat's Flesch–Kincaid
grade). A text's values are computed once, however many comparisons it enters.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from measures.metrics.readability import READABILITY_FORMULAS
from measures.stats.pairwise import Comparison

READING_GRADE = "fkgl"
COVARIATE_LABELS = {
    "words": "length difference (words, left − right)",
    "reading_grade": "reading-grade difference (FKGL, left − right)",
}


def text_style(text: str) -> tuple[float, float]:
    """(words, FKGL grade) of one text."""
    return float(len(text.split())), float(READABILITY_FORMULAS[READING_GRADE](text)) if text.strip() else 0.0


def comparison_covariates(
    comparisons: Sequence[Comparison], texts: Mapping[tuple[Any, Any], str]
) -> dict[str, list[float]] | None:
    """The covariates of each comparison, from ``texts`` keyed (source, system); None when a
    compared text is missing."""
    style: dict[tuple[Hashable, Hashable], tuple[float, float]] = {}
    words, grades = [], []
    for c in comparisons:
        values = []
        for system in (c.left, c.right):
            key = (c.source, system)
            if key not in texts:
                return None
            if key not in style:
                style[key] = text_style(texts[key])
            values.append(style[key])
        words.append(values[0][0] - values[1][0])
        grades.append(values[0][1] - values[1][1])
    return {"words": words, "reading_grade": grades}


def style_controlled_rankings(
    asked: Sequence[Comparison],
    derived: Sequence[Comparison],
    texts: Mapping[tuple[Any, Any], str],
    *,
    confidence: float = 0.95,
) -> dict[str, Any] | None:
    """{"asked": …, "derived": …}: each a measures.stats.style_bt.style_controlled_ranking (or None
    when there are no comparisons, or a reason when a text is missing); None when both are empty."""
    from measures.stats.style_bt import style_controlled_ranking

    if not asked and not derived:
        return None
    out: dict[str, Any] = {"reading_grade_metric": READING_GRADE}
    for name, comparisons in (("asked", asked), ("derived", derived)):
        if not comparisons:
            out[name] = None
            continue
        covariates = comparison_covariates(comparisons, texts)
        if covariates is None:
            out[name] = {"error": "a compared system has no text for its source: no covariates"}
            continue
        out[name] = style_controlled_ranking(
            comparisons, covariates, labels=COVARIATE_LABELS, confidence=confidence
        )
    return out
