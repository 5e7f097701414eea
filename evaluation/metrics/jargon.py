"""HIT, CWR and AScore (seed 001, section 5.1).

- HIT = n_t / n_p: of the n_p distinct jargon terms the glossary finds in the source
  (entries whose plain rendering differs from the term), the share the output renders
  in plain language. A term counts as rendered when its plain-language rendering
  appears in the output (verbatim, or all its content words), or when the term itself
  no longer does.
- CWR = n_c / n: the share of the output's words whose lemma is among the 3000 most
  common English words (data/common_words_3000.txt; see its build script).
- AScore = (1 + a^2 + b^2) / (a^2/BLEU + b^2/HIT + 1/CWR), a = 2, b = 1.5, BLEU in
  0-1, each zero replaced by 1e-8 as the seed says.

The glossary is another module's (``generation.glossary.lexicon.find_terms``); every
function here takes a ``find_terms`` callable so tests and other glossaries can
supply their own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from evaluation.metrics.reference import sentence_bleu
from evaluation.metrics.registry import (
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricUnavailable,
    MetricValue,
    register,
)

__all__ = [
    "ASCORE_ALPHA",
    "ASCORE_BETA",
    "CommonWords",
    "FindTerms",
    "TermMatchLike",
    "ascore",
    "common_word_ratio",
    "default_find_terms",
    "hit_ratio",
    "word_tokens",
]

ASCORE_ALPHA = 2.0
ASCORE_BETA = 1.5
ASCORE_ZERO = 1e-8
DATA_DIR = Path(__file__).resolve().parent / "data"


class TermMatchLike(Protocol):
    """What HIT reads of a glossary match (generation.glossary.lexicon.TermMatch)."""

    term: str
    plain: str
    start: int
    end: int


FindTerms = Callable[[str], Sequence[TermMatchLike]]


def default_find_terms() -> FindTerms:
    """The project glossary's matcher, imported only when needed."""
    try:
        from generation.glossary.lexicon import find_terms
    except ImportError as exc:  # built by another module; its absence makes HIT unavailable
        raise MetricUnavailable(
            f"the radiology glossary (generation.glossary.lexicon) is not available: {exc}"
        ) from exc
    return find_terms


# ---------------------------------------------------------------------------- words

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_NEGATED_BASE = {"ca": "can", "wo": "will", "sha": "shall", "ai": "am"}


def word_tokens(text: str) -> list[str]:
    """Lower-cased words of ``text``: letters only (numbers and measurements such as
    "1.2 cm"'s "1.2" are not words), contractions expanded to their words ("don't" ->
    do, not; "it's" -> it, as the clitic is not a word of its own)."""
    words: list[str] = []
    for token in _WORD.findall(text.lower().replace("’", "'")):
        if token.endswith("n't"):
            base = token[:-3]
            words.extend([_NEGATED_BASE.get(base, base), "not"] if base else ["not"])
        elif "'" in token:
            words.append(token.split("'", 1)[0])
        else:
            words.append(token)
    return [word for word in words if word]


class CommonWords:
    """Membership in the common-word list, through the shipped inflection table."""

    def __init__(self, words_path: Path | None = None, forms_path: Path | None = None) -> None:
        self.words = frozenset(_data_lines(words_path or DATA_DIR / "common_words_3000.txt"))
        forms: dict[str, tuple[str, ...]] = {}
        for line in _data_lines(forms_path or DATA_DIR / "common_word_forms.txt"):
            form, lemmas = line.split("\t")
            forms[form] = tuple(lemmas.split(","))
        self.forms = forms

    def lemmas(self, word: str) -> tuple[str, ...]:
        return self.forms.get(word, (word,))

    def is_common(self, word: str) -> bool:
        return any(lemma in self.words for lemma in self.lemmas(word))


def _data_lines(path: Path) -> list[str]:
    return [
        line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")
    ]


@functools.cache
def _default_common_words() -> CommonWords:
    return CommonWords()


def common_word_ratio(text: str, *, common_words: CommonWords | None = None) -> float | None:
    """CWR: share of the words of ``text`` that are common (None when it has no word)."""
    words = word_tokens(text)
    if not words:
        return None
    common = common_words or _default_common_words()
    return sum(common.is_common(word) for word in words) / len(words)


# ---------------------------------------------------------------------------- HIT


def _phrase_pattern(phrase: str) -> re.Pattern[str] | None:
    words = _WORD.findall(phrase.lower())
    if not words:
        return None
    return re.compile(r"(?<![a-z0-9])" + r"[\s\-]+".join(map(re.escape, words)) + r"(?![a-z0-9])")


def _normalised_phrase(phrase: str) -> str:
    return " ".join(_WORD.findall(phrase.lower()))


def _contains_phrase(text: str, phrase: str) -> bool:
    pattern = _phrase_pattern(phrase)
    return bool(pattern and pattern.search(text.lower()))


def _plain_rendered(candidate: str, plain: str) -> bool:
    """The plain rendering appears verbatim, or all its content words do (the output
    may say "fluid around your lungs" for "fluid around the lungs")."""
    if not plain.strip():
        return False
    if _contains_phrase(candidate, plain):
        return True
    content = {word for word in word_tokens(plain) if word not in ENGLISH_STOP_WORDS}
    return bool(content) and content <= set(word_tokens(candidate))


def hit_ratio(source: str, candidate: str, *, find_terms: FindTerms) -> float | None:
    """HIT for one source/output pair; None when the source has no jargon term
    (n_p = 0 leaves the ratio undefined)."""
    source_terms: dict[str, TermMatchLike] = {}
    for match in find_terms(source):
        # An entry whose plain rendering is the term itself is not jargon.
        if _normalised_phrase(match.term) != _normalised_phrase(match.plain):
            source_terms.setdefault(match.term.casefold(), match)
    if not source_terms:
        return None
    candidate_terms = {match.term.casefold() for match in find_terms(candidate)}
    rendered = 0
    for key, match in source_terms.items():
        surface = source[match.start : match.end]
        still_there = (
            key in candidate_terms
            or _contains_phrase(candidate, match.term)
            or _contains_phrase(candidate, surface)
        )
        if _plain_rendered(candidate, match.plain) or not still_there:
            rendered += 1
    return rendered / len(source_terms)


# ---------------------------------------------------------------------------- AScore


def ascore(
    bleu: float, hit: float, cwr: float, *, alpha: float = ASCORE_ALPHA, beta: float = ASCORE_BETA
) -> float:
    """Seed 001's AScore from BLEU (0-1), HIT and CWR."""
    bleu, hit, cwr = (value if value != 0 else ASCORE_ZERO for value in (bleu, hit, cwr))
    return (1 + alpha**2 + beta**2) / (alpha**2 / bleu + beta**2 / hit + 1 / cwr)


# ---------------------------------------------------------------------------- family


def _find_terms(context: MetricContext) -> FindTerms | None:
    given = context.option("find_terms")
    if given is not None:
        return given
    try:
        return default_find_terms()
    except MetricUnavailable:
        return None


def _texts(records: Sequence[MetricRecord], context: MetricContext) -> list[dict[str, MetricValue]]:
    find_terms = _find_terms(context)
    rows = []
    for record in records:
        hit = (
            hit_ratio(record.source_text, record.candidate_text, find_terms=find_terms)
            if find_terms
            else None
        )
        cwr = common_word_ratio(record.candidate_text)
        score = None
        if record.reference_text and hit is not None and cwr is not None:
            bleu = sentence_bleu(record.candidate_text, [record.reference_text]) / 100
            score = ascore(bleu, hit, cwr)
        rows.append({"hit": hit, "cwr": cwr, "ascore": score})
    return rows


def _unavailable(context: MetricContext) -> dict[str, str]:
    if context.option("find_terms") is not None:
        return {}
    try:
        default_find_terms()
    except MetricUnavailable as exc:
        return {"hit": str(exc), "ascore": f"AScore needs HIT: {exc}"}
    return {}


FAMILY = register(
    MetricFamily(
        name="jargon",
        description="Seed 001: HIT (jargon terms rendered in plain language; option find_terms, default "
        "the project glossary), CWR (common-word ratio) and AScore (alpha=2, beta=1.5; needs a reference "
        "for BLEU).",
        text_metrics=("hit", "cwr", "ascore"),
        compute_texts=_texts,
        needs_source=True,
        unavailable=_unavailable,
        undefined={
            "ascore": "AScore needs a reference simplification (for BLEU) and a jargon term in the source "
            "(for HIT); no text here has both"
        },
    )
)
