"""HIT, omission rate, CWR and AScore (seed 001, section 5.1).

- HIT = n_t / n_p: of the n_p distinct jargon terms the glossary finds in the source, the share
  n_t the output *correctly translates*: one of the term's lay renderings (the plain rendering or
  an accepted paraphrase of `lexicon`'s glossary, near-synonyms allowed) is present. A term the
  output simply drops is not translated: it is an omission, and the omission rate (omitted terms
  / n_p) is reported beside HIT as a safety signal. A rendering the source already contains earns
  nothing while the term is still there, so copying the source scores 0.
- CWR = n_c / n: n is the length of the output tokenised with NLTK's TreebankWordTokenizer (after
  radlay's sentence splitter, since that tokenizer expects one sentence), punctuation and numbers
  included, as seed 001 divides by "the length of the translated sentence"; n_c the tokens whose
  lemma is among the 3000 most common English words (`lexicon.common_words.is_common`).
- AScore = (1 + a^2 + b^2) / (a^2/BLEU + b^2/HIT + 1/CWR), a = 2, b = 1.5, BLEU in 0-1, each zero
  replaced by 1e-8 as the seed says. Per system (`ascore`) it is the seed's: the formula on the
  system's corpus BLEU (sacrebleu) and its mean HIT and CWR, as Table 3 of seed 001 reports it.
  Per text (`ascore_item`) it is the formula on that text's sentence BLEU, HIT and CWR: a per-item
  value for correlations, not the seed's figure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nltk.tokenize import TreebankWordTokenizer

import lexicon
from evaluation.metrics.reference import corpus_bleu, sentence_bleu
from evaluation.metrics.registry import (
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricValue,
    family_version,
    register,
)
from evaluation.metrics.sentences import split_sentences
from lexicon.common_words import CommonWords, load_common_words
from lexicon.facts import rendering_present
from lexicon.glossary import Glossary, load_glossary

__all__ = [
    "ASCORE_ALPHA",
    "ASCORE_BETA",
    "HitResult",
    "TermOutcome",
    "ascore",
    "common_word_ratio",
    "cwr_tokens",
    "hit_details",
    "hit_ratio",
    "system_ascore",
]

# The glossary, common-word and synonym lists HIT and CWR read: part of the family's version.
LEXICON_DATA = tuple(
    path
    for path in (Path(lexicon.__file__).resolve().parent / "data").iterdir()
    if path.suffix in (".tsv", ".txt")
)

ASCORE_ALPHA = 2.0
ASCORE_BETA = 1.5
ASCORE_ZERO = 1e-8

Outcome = Literal["translated", "omitted", "kept"]


@dataclass(frozen=True)
class TermOutcome:
    """One distinct jargon term of the source and what the output did with it."""

    term: str
    outcome: Outcome


@dataclass(frozen=True)
class HitResult:
    """The source's distinct jargon terms and their outcomes; both rates are None without jargon."""

    terms: tuple[TermOutcome, ...]

    def _share(self, outcome: Outcome) -> float | None:
        if not self.terms:
            return None
        return sum(t.outcome == outcome for t in self.terms) / len(self.terms)

    @property
    def hit(self) -> float | None:
        return self._share("translated")

    @property
    def omission_rate(self) -> float | None:
        return self._share("omitted")


def hit_details(source: str, candidate: str, *, glossary: Glossary | None = None) -> HitResult:
    """Every distinct jargon term of `source`: translated (a lay rendering is in `candidate`),
    omitted (neither the term nor a rendering is), or kept (the term is there untranslated)."""
    glossary = glossary or load_glossary()
    candidate_terms = {match.term for match in glossary.find_terms(candidate)}
    outcomes: dict[str, TermOutcome] = {}
    for match in glossary.find_terms(source):
        entry = glossary.get(match.term)
        # Plural surface forms of a non-jargon entry ("kidneys") are no more jargon than the entry.
        if entry is None or not entry.is_jargon or match.term in outcomes:
            continue
        # The surface check catches a term inside a longer match ("effusion" in "pleural effusion").
        term_kept = match.term in candidate_terms or _contains(candidate, match.surface)
        rendered = rendering_present(entry, candidate)
        if rendered and term_kept and rendering_present(entry, source):
            rendered = False  # the rendering was already in the source: nothing was translated
        if rendered:
            outcome: Outcome = "translated"
        elif term_kept:
            outcome = "kept"
        else:
            outcome = "omitted"
        outcomes[match.term] = TermOutcome(match.term, outcome)
    return HitResult(tuple(outcomes.values()))


def _contains(text: str, phrase: str) -> bool:
    words = re.findall(r"[a-z0-9]+", phrase.lower())
    pattern = r"(?<![a-z0-9])" + r"[\s\-]+".join(map(re.escape, words)) + r"(?![a-z0-9])"
    return bool(words) and re.search(pattern, text.lower()) is not None


def hit_ratio(source: str, candidate: str, *, glossary: Glossary | None = None) -> float | None:
    """HIT for one source/output pair; None when the source has no jargon term (n_p = 0)."""
    return hit_details(source, candidate, glossary=glossary).hit


# ---------------------------------------------------------------------------- CWR

_treebank = TreebankWordTokenizer()


def cwr_tokens(text: str) -> list[str]:
    """NLTK Treebank tokens of `text`, sentence by sentence (the tokenizer only splits a final period)."""
    return [token for sentence in split_sentences(text) for token in _treebank.tokenize(sentence)]


def common_word_ratio(text: str, *, common_words: CommonWords | None = None) -> float | None:
    """CWR: common tokens / all tokens of `text` (None when it has no token)."""
    tokens = cwr_tokens(text)
    if not tokens:
        return None
    common = common_words or load_common_words()
    return sum(common.is_common(token) for token in tokens) / len(tokens)


# ---------------------------------------------------------------------------- AScore


def ascore(
    bleu: float, hit: float, cwr: float, *, alpha: float = ASCORE_ALPHA, beta: float = ASCORE_BETA
) -> float:
    """Seed 001's AScore from BLEU (0-1), HIT and CWR."""
    bleu, hit, cwr = (value if value != 0 else ASCORE_ZERO for value in (bleu, hit, cwr))
    return (1 + alpha**2 + beta**2) / (alpha**2 / bleu + beta**2 / hit + 1 / cwr)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None and not math.isnan(v)]
    return sum(present) / len(present) if present else None


def system_ascore(
    candidates: Sequence[str],
    references: Sequence[str],
    hits: Sequence[float | None],
    cwrs: Sequence[float | None],
) -> float | None:
    """Seed 001's system AScore: the formula on corpus BLEU (sacrebleu, 0-1) of `candidates`
    against `references` and the mean of the texts' HIT and CWR (undefined values left out)."""
    hit, cwr = _mean(hits), _mean(cwrs)
    if not candidates or hit is None or cwr is None:
        return None
    bleu = corpus_bleu(candidates, [[reference] for reference in references]) / 100
    return ascore(bleu, hit, cwr)


# ---------------------------------------------------------------------------- family


def _texts(records: Sequence[MetricRecord], context: MetricContext) -> list[dict[str, MetricValue]]:
    glossary = context.option("glossary")
    rows = []
    for record in records:
        details = hit_details(record.source_text, record.candidate_text, glossary=glossary)
        cwr = common_word_ratio(record.candidate_text)
        score = None
        if record.reference_text and details.hit is not None and cwr is not None:
            bleu = sentence_bleu(record.candidate_text, [record.reference_text]) / 100
            score = ascore(bleu, details.hit, cwr)
        rows.append(
            {"hit": details.hit, "omission_rate": details.omission_rate, "cwr": cwr, "ascore_item": score}
        )
    return rows


def _corpus(
    records: Sequence[MetricRecord], context: MetricContext, texts: Sequence[Mapping[str, MetricValue]]
) -> dict[str, MetricValue]:
    # BLEU needs the reference, so all three come from the texts that have one.
    with_reference = [i for i, record in enumerate(records) if record.reference_text]
    hits = [texts[i]["hit"] for i in with_reference]
    cwrs = [texts[i]["cwr"] for i in with_reference]
    with_reference = [records[i] for i in with_reference]
    score = system_ascore(
        [record.candidate_text for record in with_reference],
        [record.reference_text or "" for record in with_reference],
        hits,
        cwrs,
    )
    return {"ascore": score}


DEFINITIONS = {
    "hit": "HIT (seed 001): of the distinct jargon terms of the original found by radlay's glossary, the "
    "share whose lay rendering (plain rendering or accepted paraphrase) the text contains; a dropped term "
    "is not a hit, and copying the original scores 0.",
    "omission_rate": "Omission rate: of the distinct jargon terms of the original, the share the text drops "
    "without any lay rendering (reported beside HIT as a safety signal).",
    "cwr": "CWR (seed 001): common tokens / all NLTK Treebank tokens of the text (punctuation and numbers "
    "count in the denominator); a token is common when its lemma is among the 3000 most common English "
    "words.",
    "ascore_item": "AScore per item: seed 001's formula (alpha 2, beta 1.5) on one text's sentence BLEU, "
    "HIT and CWR; a per-item value for correlations, not the seed's system figure.",
    "ascore": "AScore per system (seed 001): (1 + 4 + 2.25) / (4/BLEU + 2.25/HIT + 1/CWR) on the system's "
    "corpus BLEU (0-1) against the reference and the mean HIT and CWR of the same texts; zeros replaced "
    "by 1e-8.",
}

FAMILY = register(
    MetricFamily(
        name="jargon",
        version=family_version("1", libraries=("nltk", "sacrebleu"), data=LEXICON_DATA),
        text_options=("glossary",),
        description="Seed 001: HIT (jargon terms translated into lay words; option glossary, default "
        "radlay's lexicon), omission rate, CWR (NLTK Treebank tokens) and AScore (alpha=2, beta=1.5; "
        "per system on corpus BLEU, mean HIT and CWR; per item as ascore_item; needs a reference).",
        text_metrics=("hit", "omission_rate", "cwr", "ascore_item"),
        compute_texts=_texts,
        corpus_metrics=("ascore",),
        compute_corpus=_corpus,
        needs_source=True,
        definitions=DEFINITIONS,
        undefined={
            "ascore": "AScore needs a reference simplification (for BLEU), and this study has none",
            "ascore_item": "AScore needs a reference simplification (for BLEU) and a jargon term in the "
            "original (for HIT); no text here has both",
        },
    )
)
