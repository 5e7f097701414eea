"""HIT, omission rate, CWR and AScore (seed 001, section 5.1).

- HIT = n_t / n_p: of the n_p distinct jargon terms the glossary finds in the source, the share
  n_t the output *translates*: it holds one of the term's lay renderings (`lay_phrases`: the plain
  rendering, its plural or an accepted paraphrase of `lexicon`'s glossary, near-synonyms allowed)
  more often than the source already did, the term's own spellings read in neither text. So a
  rendering counts only where the output adds it: keeping wording the source had elsewhere ("The
  liver is normal; the spleen is unremarkable." -> "The liver is normal.") or copying the source
  scores 0, and keeping the term with an explanation added ("CT (detailed X-ray pictures)") scores.
  A rendering that restates the term ("CT scan (detailed X-ray pictures)" of "CT") counts only
  through its gloss, and a phrase made of the term's own words ("partially" of "partially
  visualized") not at all. A term neither translated nor kept is an omission; the omission rate
  (omitted terms / n_p) is reported beside HIT as a safety signal. HIT is lexical, as seed 001
  defines it: a rendering counts as a bag of words, whatever their order and whether or not the
  output negates it (lexicon.facts.check_facts is the check of meaning).
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from nltk.tokenize import TreebankWordTokenizer

import lexicon
from lexicon.common_words import CommonWords, load_common_words
from lexicon.facts import content_stems, phrase_count, phrase_stems, stem_counts
from lexicon.glossary import GLOSS, Glossary, GlossaryEntry, load_glossary
from measures.metrics.reference import corpus_bleu, sentence_bleu
from measures.metrics.registry import (
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricValue,
    family_version,
    register,
)
from measures.metrics.sentences import split_sentences

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
    "lay_phrases",
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
    """Every distinct jargon term of `source`: translated (`candidate` says it in lay words the
    source did not already hold, see `_newly_rendered`), kept (the term is still there,
    unexplained) or omitted (neither)."""
    glossary = glossary or load_glossary()
    outcomes: dict[str, TermOutcome] = {}
    for match in glossary.find_terms(source):
        entry = glossary.get(match.term)
        # Plural surface forms of a non-jargon entry ("kidneys") are no more jargon than the entry.
        if entry is None or not entry.is_jargon or match.term in outcomes:
            continue
        # Inside a longer term too: "effusion" is kept in "pleural effusion", "CT" in "CT scan".
        in_candidate = glossary.jargon_occurrences(entry, candidate)
        if _newly_rendered(entry, source, candidate, in_candidate, glossary):
            outcome: Outcome = "translated"
        elif in_candidate:
            outcome = "kept"
        else:
            outcome = "omitted"
        outcomes[match.term] = TermOutcome(match.term, outcome)
    return HitResult(tuple(outcomes.values()))


@lru_cache(maxsize=4096)
def lay_phrases(entry: GlossaryEntry, glossary: Glossary) -> tuple[str, ...]:
    """What HIT accepts as a lay rendering of `entry`: each of its renderings (plain, plural,
    paraphrases) without its parenthesised gloss, or only the gloss when the rendering restates the
    term ("CT scan (detailed X-ray pictures)" of CT, "simple (harmless)": the term with a generic
    word added explains nothing). A phrase made only of the term's own words ("partially" of
    "partially visualized", "air and fluid" of "air-fluid level") is left out: the source already
    says it at the term's place, and keeping it while dropping the rest is a deletion."""
    term_words = content_stems(" ".join(entry.jargon_forms()))
    phrases: list[str] = []
    for rendering in entry.lay_renderings():
        bare = GLOSS.sub("", rendering).strip()
        phrases.extend(GLOSS.findall(rendering) if glossary.jargon_occurrences(entry, bare) else [bare])
    return tuple(dict.fromkeys(phrase for phrase in phrases if not phrase_stems(phrase) <= term_words))


def _newly_rendered(
    entry: GlossaryEntry,
    source: str,
    candidate: str,
    in_candidate: list[tuple[int, int]],
    glossary: Glossary,
) -> bool:
    """True when `candidate` holds one of the entry's lay phrases more often than `source` did,
    the term's own words read in neither (its spellings blanked out). The wording the source
    already had elsewhere ("The liver is normal; the spleen is unremarkable.") is no translation
    when the candidate merely keeps it, and copying or deleting never raises a count."""
    before = stem_counts(_blanked(source, glossary.jargon_occurrences(entry, source)))
    after = stem_counts(_blanked(candidate, in_candidate))
    return any(
        phrase_count(phrase, after) > phrase_count(phrase, before) for phrase in lay_phrases(entry, glossary)
    )


def _blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    characters = list(text)
    for start, end in spans:
        characters[start:end] = " " * (end - start)
    return "".join(characters)


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
    referenced = [i for i, record in enumerate(records) if record.reference_text]
    hits = [texts[i]["hit"] for i in referenced]
    cwrs = [texts[i]["cwr"] for i in referenced]
    with_reference = [records[i] for i in referenced]
    score = system_ascore(
        [record.candidate_text for record in with_reference],
        [record.reference_text or "" for record in with_reference],
        hits,
        cwrs,
    )
    return {"ascore": score}


DEFINITIONS = {
    "hit": "HIT (seed 001): of the distinct jargon terms of the original found by radlay's glossary, the "
    "share the text translates: it holds a lay rendering of the term (plain rendering or accepted "
    "paraphrase; near-synonyms count) more often than the original already did, the term's own words "
    "read in neither. Wording the original already had earns nothing, so copying the original, or "
    "deleting the term and keeping the rest, scores 0; keeping the term with an added explanation "
    'scores. A rendering that restates the term ("CT scan" of CT) counts only through its '
    "explanation. HIT is lexical, as seed 001 defines it: a rendering is matched as a bag of words, so a "
    'negated rendering ("no fatty liver" for "hepatic steatosis") and a word salad holding its words '
    "both count; meaning is checked by the fact check, not by HIT.",
    "omission_rate": "Omission rate: of the distinct jargon terms of the original, the share the text "
    "neither translates (as HIT counts) nor keeps (reported beside HIT as a safety signal).",
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
        version=family_version("2", libraries=("nltk", "sacrebleu"), data=LEXICON_DATA),
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
