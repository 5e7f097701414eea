"""Readability formulas (textstat 0.7.3, pinned: the protocol's FKGL values are its own).

textstat 0.7.3 counts syllables with pyphen's bundled hyphenation dictionaries, so it
runs offline; later versions download cmudict at first use.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from measures.metrics.registry import (
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

__all__ = [
    "FORMULAS",
    "QUANTITIES",
    "READABILITY_FORMULAS",
    "SMOG_MIN_SENTENCES",
    "Formula",
    "Quantity",
    "formula_definition",
    "formula_text",
    "readability_scores",
    "share_at_or_below_grade",
]

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


# The formulas as textstat 0.7.3 computes them (read in its source, textstat/textstat.py), the one
# place their constants are written down: the metric definitions and the report's Methods are worded
# from it, and tests/measures/metrics/test_readability.py evaluates it on counts of its own and
# checks the result equals textstat's. The scores themselves stay textstat's functions.
@dataclass(frozen=True)
class Quantity:
    """A count-based quantity a formula reads: its symbol in the formula, what is counted, and the
    decimals textstat rounds it to before the formula uses it (None: not rounded)."""

    symbol: str
    meaning: str
    decimals: int | None = None


QUANTITIES: dict[str, Quantity] = {
    "words_per_sentence": Quantity("words/sentence", "words / sentences, rounded to 1 decimal", 1),
    "syllables_per_word": Quantity("syllables/word", "syllables / words, rounded to 1 decimal", 1),
    "characters_per_word": Quantity(
        "characters/word",
        "characters (every non-space character, punctuation included) / words, rounded to 2 decimals",
        2,
    ),
    "words_per_sentence_ari": Quantity("words/sentence", "words / sentences, rounded to 2 decimals", 2),
    "complex_word_percent": Quantity(
        "complex-word %",
        "100 × complex words / words, the complex words being the distinct lower-cased words of 3 or "
        "more syllables that are not on the Dale–Chall easy-word list (a word repeated counts once)",
    ),
    "polysyllable_root": Quantity(
        "√(30 × P / sentences)",
        "P = the words of 3 or more syllables, every occurrence counted",
    ),
    "letters_per_100_words": Quantity(
        "L",
        "letters per 100 words, 100 × (letters / words, rounded to 2 decimals), the letters being the "
        "characters other than spaces and punctuation",
        2,
    ),
    "sentences_per_100_words": Quantity(
        "S", "sentences per 100 words, 100 × (sentences / words, rounded to 2 decimals)", 2
    ),
    "difficult_word_percent": Quantity(
        "difficult-word %",
        "100 × difficult words / words, the difficult words being the distinct lower-cased words not "
        "on the Dale–Chall easy-word list, of any length",
    ),
}

# How textstat 0.7.3 counts for every formula.
COUNTS = (
    "words: the whitespace-separated tokens once punctuation is removed (so a hyphenated word is one "
    "word); sentences: the runs of text ending in . ! or ?, those of at most two words not counted, at "
    "least 1; syllables: pyphen's en_US hyphenation points of a word plus one"
)


@dataclass(frozen=True)
class Formula:
    """One readability formula: `factor` × (Σ coefficient × quantity, a None quantity being the
    constant), plus `bonus` when the quantity `bonus_when` exceeds `bonus_above`, rounded to
    `decimals` (textstat rounds half away from zero)."""

    label: str
    terms: tuple[tuple[float, str | None], ...]
    decimals: int
    factor: float = 1.0
    bonus: float = 0.0
    bonus_when: str = ""
    bonus_above: float = 0.0
    note: str = ""


FORMULAS: dict[str, Formula] = {
    "fkgl": Formula(
        "Flesch–Kincaid grade level",
        ((0.39, "words_per_sentence"), (11.8, "syllables_per_word"), (-15.59, None)),
        decimals=1,
    ),
    "gunning_fog": Formula(
        "Gunning Fog index",
        ((1.0, "words_per_sentence"), (1.0, "complex_word_percent")),
        decimals=2,
        factor=0.4,
    ),
    "ari": Formula(
        "Automated Readability Index",
        ((4.71, "characters_per_word"), (0.5, "words_per_sentence_ari"), (-21.43, None)),
        decimals=1,
    ),
    "smog": Formula(
        "SMOG grade",
        ((1.043, "polysyllable_root"), (3.1291, None)),
        decimals=1,
        note=f"undefined below {SMOG_MIN_SENTENCES} sentences",
    ),
    "coleman_liau": Formula(
        "Coleman–Liau index",
        ((0.058, "letters_per_100_words"), (-0.296, "sentences_per_100_words"), (-15.8, None)),
        decimals=2,
    ),
    "dale_chall": Formula(
        "Dale–Chall readability score",
        ((0.1579, "difficult_word_percent"), (0.0496, "words_per_sentence")),
        decimals=2,
        bonus=3.6365,
        bonus_when="difficult_word_percent",
        bonus_above=5,
    ),
    "flesch_reading_ease": Formula(
        "Flesch Reading Ease",
        ((206.835, None), (-1.015, "words_per_sentence"), (-84.6, "syllables_per_word")),
        decimals=2,
        note="higher is easier",
    ),
}


def formula_text(name: str) -> str:
    """The formula of metric `name` written from FORMULAS ("0.39 × words/sentence + …")."""
    formula = FORMULAS[name]
    parts: list[str] = []
    for coefficient, key in formula.terms:
        term = f"{abs(coefficient):g}"
        if key is not None:
            term = QUANTITIES[key].symbol if abs(coefficient) == 1 else f"{term} × {QUANTITIES[key].symbol}"
        if parts:
            parts.append(f"{'−' if coefficient < 0 else '+'} {term}")
        else:
            parts.append(f"−{term}" if coefficient < 0 else term)
    text = " ".join(parts)
    if formula.factor != 1:
        text = f"{formula.factor:g} × ({text})"
    if formula.bonus:
        text += (
            f", + {formula.bonus:g} when {QUANTITIES[formula.bonus_when].symbol} > {formula.bonus_above:g}"
        )
    return text


def formula_definition(name: str) -> str:
    """What the Methods say of metric `name`: the formula, what each of its quantities counts, the
    rounding, as textstat 0.7.3 computes it."""
    formula = FORMULAS[name]
    keys = dict.fromkeys(key for _, key in formula.terms if key is not None)
    where = "; ".join(f"{QUANTITIES[key].symbol}: {QUANTITIES[key].meaning}" for key in keys)
    note = f"; {formula.note}" if formula.note else ""
    return (
        f"{formula.label} (textstat 0.7.3): {formula_text(name)}, rounded to {formula.decimals} "
        f"decimal{'s' if formula.decimals != 1 else ''}; {where}{note}."
    )


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
        f"(default 8) for the share of texts at or below that FKGL grade. Counts (textstat 0.7.3): {COUNTS}.",
        text_metrics=tuple(READABILITY_FORMULAS),
        compute_texts=_texts,
        corpus_metrics=("fkgl_share_at_or_below_grade",),
        compute_corpus=_corpus,
        definitions={
            **{name: formula_definition(name) for name in FORMULAS},
            "fkgl_share_at_or_below_grade": "Share of a system's texts whose FKGL is at or below the "
            "readability_grade option (default 8).",
        },
        undefined={
            "smog": f"SMOG is defined from {SMOG_MIN_SENTENCES} sentences on, and every text here is shorter"
        },
    )
)
