"""The de-identification detector: Presidio's analyzer, offline. Django-free.

Presidio normally pairs its pattern recognizers with a spaCy model for names and places; no spaCy
model can be installed from PyPI (they are published elsewhere), and a model fetched at run time
would be a network call from inside a hospital. The analyzer here therefore runs with Presidio's
`NoOpNlpEngine` (no model, no tokens) and recognizers that need none: Presidio's own for phone
numbers (Google's `phonenumbers`), social security numbers, IP addresses and numeric dates, and
radlay's (`recognizers.py`) for the rest. Presidio's e-mail and URL recognizers are left out: they
validate through `tldextract`, which fetches the public-suffix list over the network.

`detect(text)` returns the identifier spans, overlaps merged; a name found once is then found
wherever its words recur in the same text ("Patient: Amaka Okafor" … "Ms Okafor's prior").
"""

from __future__ import annotations

import re
from functools import lru_cache

from privacy.detection import names
from privacy.detection.presidio_without_models import (
    AnalyzerEngine,
    ContextAwareEnhancer,
    DateRecognizer,
    IpRecognizer,
    NoOpNlpEngine,
    PhoneRecognizer,
    RecognizerRegistry,
    RecognizerResult,
    UsSsnRecognizer,
)
from privacy.detection.recognizers import radiology_recognizers
from privacy.detection.spans import DETECTOR_VERSION, REVIEW_BELOW, Span, merge_overlaps

__all__ = ["DETECTOR_VERSION", "KIND_OF_ENTITY", "REVIEW_BELOW", "analyzer", "detect"]

# Presidio's entity types (its own and those radlay's recognizers report) → radlay's kinds.
KIND_OF_ENTITY = {
    "PERSON": "NAME",
    "DATE_TIME": "DATE",
    "AGE_OVER_89": "AGE",
    "PHONE_NUMBER": "PHONE",
    "PHONE_LABELLED": "PHONE",
    "EMAIL_ADDRESS": "EMAIL",
    "US_SSN": "SSN",
    "SSN_LABELLED": "SSN",
    "MEDICAL_RECORD_NUMBER": "MRN",
    "ACCESSION_NUMBER": "ACCESSION",
    "OTHER_ID": "ID",
    "LOCATION": "LOCATION",
    "URL": "URL",
    "IP_ADDRESS": "IP",
}

# Presidio's numeric date patterns without the two that read fractions and levels as dates
# ("3/10", "12-Mar" are rare in headers, "5/12" common in findings).
_DATE_PATTERNS_LEFT_OUT = ("mm/yy or m/yy", "dd-MMM or dd-MMM")


@lru_cache(maxsize=1)
def analyzer() -> AnalyzerEngine:
    registry = RecognizerRegistry(supported_languages=["en"])
    date_patterns = [p for p in DateRecognizer.PATTERNS if p.name not in _DATE_PATTERNS_LEFT_OUT]
    for recognizer in (
        # Each region is one more pass of phonenumbers' matcher (the costliest recognizer);
        # radlay's own patterns take North American and "+"-prefixed international numbers.
        PhoneRecognizer(supported_regions=("US",)),
        UsSsnRecognizer(),
        DateRecognizer(patterns=date_patterns),
        IpRecognizer(),
        *radiology_recognizers(),
    ):
        registry.add_recognizer(recognizer)
    nlp_engine = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    nlp_engine.load()
    return AnalyzerEngine(
        registry=registry,
        nlp_engine=nlp_engine,
        supported_languages=["en"],
        context_aware_enhancer=_NoContextEnhancer(),
    )


class _NoContextEnhancer(ContextAwareEnhancer):
    """Presidio's default enhancer raises scores by context words from the NLP engine's lemmas;
    the model-free engine has none, and radlay's patterns carry their context themselves."""

    def __init__(self) -> None:
        super().__init__(
            context_similarity_factor=0.0,
            min_score_with_context_similarity=0.0,
            context_prefix_count=0,
            context_suffix_count=0,
        )

    def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):  # noqa: ANN001, ANN201
        return raw_results


def detect(text: str) -> list[Span]:
    """The identifier spans of `text`, ordered and never overlapping."""
    results = analyzer().analyze(text=text, language="en", score_threshold=0.3)
    spans = [
        Span(r.start, r.end, KIND_OF_ENTITY[r.entity_type], round(float(r.score), 3), _recognizer(r))
        for r in results
        if r.entity_type in KIND_OF_ENTITY and r.end > r.start
    ]
    spans = merge_overlaps(spans)
    return merge_overlaps(spans + _recurring_names(text, spans))


def _recognizer(result: RecognizerResult) -> str:
    return str((result.recognition_metadata or {}).get(RecognizerResult.RECOGNIZER_NAME_KEY, ""))


_CAPITALISED = re.compile(r"\b[A-ZÀ-ÖØ-Þ][A-Za-zß-öø-ÿĀ-ſ'’-]{2,}\b")


def _recurring_names(text: str, spans: list[Span]) -> list[Span]:
    """Every other occurrence of a word of a found name (one pattern for all texts: compiling a
    pattern of the names per text costs more than the whole analysis)."""
    never = names.never_names()
    words = {
        match.group(0)
        for span in spans
        if span.kind == "NAME"
        for match in _CAPITALISED.finditer(text, span.start, span.end)
        if match.group(0).lower() not in names.REPORT_WORDS and match.group(0).lower() not in never
    }
    if not words:
        return []
    return [
        Span(m.start(), m.end(), "NAME", 0.7, "radlay-recurring-name")
        for m in _CAPITALISED.finditer(text)
        if m.group(0) in words
    ]
