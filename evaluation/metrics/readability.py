"""Readability formulas (textstat 0.7.3, pinned: the protocol's FKGL values are its own).

textstat 0.7.3 counts syllables with pyphen's bundled hyphenation dictionaries, so it
runs offline; later versions download cmudict at first use.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence

from evaluation.metrics.registry import (
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricValue,
    family_version,
    register,
)

with warnings.catch_warnings():
    # textstat 0.7.3 imports pkg_resources, which warns about its own deprecation.
    warnings.simplefilter("ignore", UserWarning)
    import textstat

__all__ = ["READABILITY_FORMULAS", "SMOG_MIN_SENTENCES", "readability_scores", "share_at_or_below_grade"]

# metric name -> textstat function of the text
READABILITY_FORMULAS: dict[str, Callable[[str], float]] = {
    "fkgl": textstat.flesch_kincaid_grade,
    "gunning_fog": textstat.gunning_fog,
    "ari": textstat.automated_readability_index,
    "smog": textstat.smog_index,
    "coleman_liau": textstat.coleman_liau_index,
    "dale_chall": textstat.dale_chall_readability_score,
    "flesch_reading_ease": textstat.flesch_reading_ease,
}


# SMOG is only defined from three sentences on; textstat returns 0.0 below that, which
# would read as "very easy", so we report None instead.
SMOG_MIN_SENTENCES = 3


def readability_scores(text: str) -> dict[str, MetricValue]:
    """Every formula's score for ``text`` (textstat's value, unchanged); all None for a
    text without words, and SMOG None for fewer than three sentences (by textstat's count)."""
    return dict(zip(READABILITY_FORMULAS, _scores(text), strict=True))


def _scores(text: str) -> tuple[MetricValue, ...]:
    if not text or not any(ch.isalnum() for ch in text):
        return (None,) * len(READABILITY_FORMULAS)
    scores: dict[str, MetricValue] = {
        name: float(formula(text)) for name, formula in READABILITY_FORMULAS.items()
    }
    if textstat.sentence_count(text) < SMOG_MIN_SENTENCES:
        scores["smog"] = None
    return tuple(scores.values())


def share_at_or_below_grade(values: Iterable[MetricValue], grade: float = 8) -> float | None:
    """Share of the (non-missing) grade levels at or below ``grade``, e.g. how many
    simplifications reach the 8th-grade level patient materials aim for."""
    present = [value for value in values if value is not None]
    if not present:
        return None
    return sum(value <= grade for value in present) / len(present)


def _texts(records: Sequence[MetricRecord], context: MetricContext) -> list[dict[str, MetricValue]]:
    return [readability_scores(record.candidate_text) for record in records]


def _corpus(
    records: Sequence[MetricRecord], context: MetricContext, texts: Sequence[Mapping[str, MetricValue]]
) -> dict[str, MetricValue]:
    grade = context.option("readability_grade", 8)
    fkgl = [text["fkgl"] for text in texts]
    return {"fkgl_share_at_or_below_grade": share_at_or_below_grade(fkgl, grade)}


FAMILY = register(
    MetricFamily(
        name="readability",
        corpus_options=("readability_grade",),
        version=family_version("1", libraries=("textstat", "pyphen")),
        description="Readability formulas of the simplification (textstat 0.7.3); option readability_grade "
        "(default 8) for the share of texts at or below that FKGL grade.",
        text_metrics=tuple(READABILITY_FORMULAS),
        compute_texts=_texts,
        corpus_metrics=("fkgl_share_at_or_below_grade",),
        compute_corpus=_corpus,
        definitions={
            "fkgl": "Flesch-Kincaid grade level (textstat 0.7.3): 0.39 words/sentence + 11.8 "
            "syllables/word - 15.59.",
            "gunning_fog": "Gunning fog index (textstat 0.7.3): 0.4 (words/sentence + 100 complex "
            "words/words).",
            "ari": "Automated readability index (textstat 0.7.3): 4.71 characters/word + 0.5 "
            "words/sentence - 21.43.",
            "smog": "SMOG grade (textstat 0.7.3); undefined below three sentences.",
            "coleman_liau": "Coleman-Liau index (textstat 0.7.3): 0.0588 letters per 100 words - 0.296 "
            "sentences per 100 words - 15.8.",
            "dale_chall": "Dale-Chall readability score (textstat 0.7.3), from the share of words "
            "outside the Dale-Chall easy-word list.",
            "flesch_reading_ease": "Flesch reading ease (textstat 0.7.3): 206.835 - 1.015 words/sentence "
            "- 84.6 syllables/word; higher is easier.",
            "fkgl_share_at_or_below_grade": "Share of a system's texts whose FKGL is at or below the "
            "readability_grade option (default 8).",
        },
        undefined={
            "smog": f"SMOG is defined from {SMOG_MIN_SENTENCES} sentences on, and every text here is shorter"
        },
    )
)
