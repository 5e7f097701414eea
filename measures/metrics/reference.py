"""Reference-based metrics, for simplifications that have a human reference.

BLEU (sacrebleu, 0-100), ROUGE-1/2/L F-measure (rouge-score, 0-1), SARI (Xu et al.
2016, 0-100, implemented here) and METEOR (NLTK, only where its WordNet data is
installed; otherwise None with the reason, never 0).

Two SARIs, named apart everywhere: ``sentence_sari`` (per text, :func:`sari`: Xu et
al.'s sentence-level definition with deletion precision) and ``corpus_sari`` (per
system, :func:`corpus_sari`: EASSE's corpus SARI with n-gram statistics pooled over
the corpus and deletion F1, the figure papers report).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import sacrebleu
from rouge_score import rouge_scorer
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from measures.metrics.registry import (
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricValue,
    family_version,
    register,
)

__all__ = [
    "SariScore",
    "corpus_bleu",
    "corpus_sari",
    "meteor",
    "meteor_unavailable_reason",
    "rouge_scores",
    "sari",
    "sentence_bleu",
]

SARI_MAX_ORDER = 4


def sentence_bleu(candidate: str, references: Sequence[str]) -> float:
    """sacrebleu's sentence BLEU (default exponential smoothing), 0-100."""
    return float(sacrebleu.sentence_bleu(candidate, list(references)).score)


def corpus_bleu(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """sacrebleu's corpus BLEU, 0-100. ``references[i]`` are the references of
    ``candidates[i]``; every candidate needs the same number of them."""
    counts = {len(refs) for refs in references}
    if len(counts) != 1:
        raise ValueError("corpus BLEU needs the same number of references for every candidate")
    streams = [list(stream) for stream in zip(*references, strict=True)]
    return float(sacrebleu.corpus_bleu(list(candidates), streams).score)


@functools.cache
def _rouge() -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)


def rouge_scores(candidate: str, reference: str) -> dict[str, float]:
    """ROUGE-1, ROUGE-2 and ROUGE-L F-measures (Porter stemming), 0-1."""
    scores = _rouge().score(reference, candidate)
    return {
        "rouge1": scores["rouge1"].fmeasure,
        "rouge2": scores["rouge2"].fmeasure,
        "rouge_l": scores["rougeL"].fmeasure,
    }


# ---------------------------------------------------------------------------- SARI


@dataclass(frozen=True)
class SariScore:
    """SARI and its three parts, each averaged over n-gram orders 1-4, 0-100."""

    sari: float
    keep_f1: float
    delete_precision: float
    add_f1: float


# sacrebleu's tokenizer class carries no annotations: typed here by what it is, str to str.
_tokenize_13a: Callable[[str], str] = Tokenizer13a()  # type: ignore[no-untyped-call]


def _sari_tokens(text: str) -> list[str]:
    return _tokenize_13a(text.lower().strip()).split()


def _ngram_counts(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _sari_order(
    source: Counter[tuple[str, ...]],
    candidate: Counter[tuple[str, ...]],
    references: Sequence[Counter[tuple[str, ...]]],
) -> tuple[float, float, float]:
    """(keep F1, delete precision, add F1) for one n-gram order, as Xu et al. define them.

    Keep and delete are fractional: source and candidate counts are multiplied by the
    number of references r and compared with the n-gram's total count over all
    references, so an n-gram kept by k of r references earns k/r. Additions are
    binary (set) comparisons. An empty denominator scores 0.
    """
    r = len(references)
    in_references: Counter[tuple[str, ...]] = Counter()
    for counts in references:
        in_references.update(counts)
    source_r = Counter({gram: count * r for gram, count in source.items()})
    candidate_r = Counter({gram: count * r for gram, count in candidate.items()})

    kept = source_r & candidate_r  # kept by the system
    kept_correctly = kept & in_references
    kept_by_references = source_r & in_references
    keep_precision = sum(kept_correctly[g] / kept[g] for g in kept_correctly) / len(kept) if kept else 0.0
    keep_recall = (
        sum(kept_correctly[g] / kept_by_references[g] for g in kept_correctly) / len(kept_by_references)
        if kept_by_references
        else 0.0
    )

    deleted = source_r - candidate_r  # deleted by the system
    deleted_correctly = deleted - in_references  # ... beyond what the references keep
    delete_precision = (
        sum(deleted_correctly[g] / deleted[g] for g in deleted_correctly) / len(deleted) if deleted else 0.0
    )

    added = set(candidate) - set(source)
    added_correctly = added & set(in_references)
    added_by_references = set(in_references) - set(source)
    add_precision = len(added_correctly) / len(added) if added else 0.0
    add_recall = len(added_correctly) / len(added_by_references) if added_by_references else 0.0

    return _f1(keep_precision, keep_recall), delete_precision, _f1(add_precision, add_recall)


def sari(source: str, candidate: str, references: Sequence[str]) -> SariScore:
    """Sentence SARI (Xu et al. 2016): the mean of keep F1, deletion precision and
    addition F1, each averaged over n = 1..4. Texts are lower-cased and tokenised with
    sacrebleu's 13a tokenizer (as EASSE does)."""
    if not references:
        raise ValueError("SARI needs at least one reference")
    source_tokens = _sari_tokens(source)
    candidate_tokens = _sari_tokens(candidate)
    reference_tokens = [_sari_tokens(reference) for reference in references]
    keep = delete = add = 0.0
    for n in range(1, SARI_MAX_ORDER + 1):
        keep_n, delete_n, add_n = _sari_order(
            _ngram_counts(source_tokens, n),
            _ngram_counts(candidate_tokens, n),
            [_ngram_counts(tokens, n) for tokens in reference_tokens],
        )
        keep += keep_n / SARI_MAX_ORDER
        delete += delete_n / SARI_MAX_ORDER
        add += add_n / SARI_MAX_ORDER
    return SariScore(
        sari=100 * (keep + delete + add) / 3,
        keep_f1=100 * keep,
        delete_precision=100 * delete,
        add_f1=100 * add,
    )


def corpus_sari(
    sources: Sequence[str], candidates: Sequence[str], references: Sequence[Sequence[str]]
) -> float:
    """Corpus SARI as EASSE's ``corpus_sari`` computes it (defaults: lowercase, sacrebleu 13a
    tokens, F1 for deletion), the figure simplification papers report; 0-100.

    ``references[i]`` are the references of sentence i (any number, at least one). The n-gram
    statistics are pooled over the corpus before any ratio is taken: per sentence and order n,
    source and candidate counts are multiplied by the sentence's number of references r and
    compared with the n-gram's total count over its references (keep and delete), while
    additions are compared as sets; the corpus sums give per-order precision and recall, each
    operation's score is the mean over n = 1..4 of the per-order F1 (0 unless precision and
    recall are both positive), and SARI is the mean of keep, delete and add. This is not the mean
    of sentence SARIs (see :func:`sari`).
    """
    if not (len(sources) == len(candidates) == len(references)) or not sources:
        raise ValueError("corpus SARI needs aligned, non-empty sources, candidates and references")
    if any(not refs for refs in references):
        raise ValueError("corpus SARI needs at least one reference per sentence")
    # totals[operation][n - 1] = [correct, system total, reference total]
    totals = {op: [[0, 0, 0] for _ in range(SARI_MAX_ORDER)] for op in ("keep", "delete", "add")}
    for source, candidate, refs in zip(sources, candidates, references, strict=True):
        source_tokens = _sari_tokens(source)
        candidate_tokens = _sari_tokens(candidate)
        reference_tokens = [_sari_tokens(reference) for reference in refs]
        r = len(refs)
        for n in range(1, SARI_MAX_ORDER + 1):
            src = _ngram_counts(source_tokens, n)
            cand = _ngram_counts(candidate_tokens, n)
            in_references: Counter[tuple[str, ...]] = Counter()
            for tokens in reference_tokens:
                in_references.update(_ngram_counts(tokens, n))
            source_r = Counter({gram: count * r for gram, count in src.items()})
            candidate_r = Counter({gram: count * r for gram, count in cand.items()})

            kept = source_r & candidate_r
            kept_by_references = source_r & in_references
            _add_counts(totals["keep"][n - 1], kept & kept_by_references, kept, kept_by_references)

            deleted = source_r - candidate_r
            deleted_by_references = source_r - in_references
            _add_counts(
                totals["delete"][n - 1], deleted & deleted_by_references, deleted, deleted_by_references
            )

            added = set(cand) - set(src)
            added_by_references = set(in_references) - set(src)
            add = totals["add"][n - 1]
            add[0] += len(added & set(in_references))
            add[1] += len(added)
            add[2] += len(added_by_references)
    scores = {
        op: sum(_pooled_f1(*counts) for counts in per_order) / SARI_MAX_ORDER
        for op, per_order in totals.items()
    }
    return 100 * (scores["keep"] + scores["delete"] + scores["add"]) / 3


def _add_counts(
    totals: list[int],
    correct: Counter[tuple[str, ...]],
    system: Counter[tuple[str, ...]],
    reference: Counter[tuple[str, ...]],
) -> None:
    totals[0] += sum(correct.values())
    totals[1] += sum(system.values())
    totals[2] += sum(reference.values())


def _pooled_f1(correct: int, system_total: int, reference_total: int) -> float:
    precision = correct / system_total if system_total else 0.0
    recall = correct / reference_total if reference_total else 0.0
    return 2 * precision * recall / (precision + recall) if precision > 0 and recall > 0 else 0.0


# ---------------------------------------------------------------------------- METEOR


@functools.cache
def meteor_unavailable_reason() -> str | None:
    """Why METEOR cannot run here, or None when NLTK's WordNet data is installed."""
    try:
        from nltk.corpus import wordnet

        wordnet.synsets("lung")
    except LookupError:
        return (
            "METEOR (NLTK) needs the WordNet corpus, which is not installed and cannot be downloaded "
            "offline; run nltk.download('wordnet') where a network is available"
        )
    return None


def meteor(candidate: str, references: Sequence[str]) -> float | None:
    """NLTK's METEOR (0-1) over 13a tokens; None when WordNet is unavailable."""
    if meteor_unavailable_reason() is not None:
        return None
    from nltk.translate.meteor_score import meteor_score

    return float(meteor_score([_sari_tokens(r) for r in references], _sari_tokens(candidate)))


# ---------------------------------------------------------------------------- family


def _texts(records: Sequence[MetricRecord], context: MetricContext) -> list[dict[str, MetricValue]]:
    rows = []
    for record in records:
        reference = record.reference_text or ""
        rows.append(
            {
                "bleu": sentence_bleu(record.candidate_text, [reference]),
                **rouge_scores(record.candidate_text, reference),
                "sentence_sari": sari(record.source_text, record.candidate_text, [reference]).sari,
                "meteor": meteor(record.candidate_text, [reference]),
            }
        )
    return rows


def _corpus(
    records: Sequence[MetricRecord], context: MetricContext, texts: Sequence[Mapping[str, MetricValue]]
) -> dict[str, MetricValue]:
    with_reference = [record for record in records if record.reference_text]
    if not with_reference:
        return {}
    return {
        "corpus_bleu": corpus_bleu(
            [record.candidate_text for record in with_reference],
            [[record.reference_text or ""] for record in with_reference],
        ),
        "corpus_sari": corpus_sari(
            [record.source_text for record in with_reference],
            [record.candidate_text for record in with_reference],
            [[record.reference_text or ""] for record in with_reference],
        ),
    }


def _unavailable(context: MetricContext) -> dict[str, str]:
    reason = meteor_unavailable_reason()
    return {"meteor": reason} if reason else {}


FAMILY = register(
    MetricFamily(
        name="reference",
        version=family_version("1", libraries=("sacrebleu", "rouge-score", "nltk")),
        description="BLEU (sacrebleu), ROUGE-1/2/L F (rouge-score), sentence SARI (Xu et al. 2016) and "
        "METEOR (NLTK) against the reference simplification; corpus BLEU and corpus SARI (EASSE) per system.",
        text_metrics=("bleu", "rouge1", "rouge2", "rouge_l", "sentence_sari", "meteor"),
        compute_texts=_texts,
        corpus_metrics=("corpus_bleu", "corpus_sari"),
        compute_corpus=_corpus,
        needs_reference=True,
        needs_source=True,
        unavailable=_unavailable,
        definitions={
            "bleu": "Sentence BLEU (sacrebleu 2, exponential smoothing, 0-100) against the reference text.",
            "rouge1": "ROUGE-1 F-measure (rouge-score, Porter stemming, 0-1) against the reference text.",
            "rouge2": "ROUGE-2 F-measure (rouge-score, Porter stemming, 0-1) against the reference text.",
            "rouge_l": "ROUGE-L F-measure (rouge-score, Porter stemming, 0-1) against the reference text.",
            "sentence_sari": "Sentence SARI (Xu et al. 2016, 0-100): mean of keep F1, deletion precision "
            "and addition F1 over n-grams 1-4 of one text, lowercased, sacrebleu 13a tokens.",
            "meteor": "METEOR (NLTK, 0-1) against the reference text; needs WordNet data.",
            "corpus_bleu": "Corpus BLEU of a system (sacrebleu 2, 0-100) against the reference texts.",
            "corpus_sari": "Corpus SARI of a system (0-100) as EASSE computes it: keep, deletion and "
            "addition n-gram statistics (n = 1-4) pooled over the system's texts, lowercased, sacrebleu "
            "13a tokens, F1 for deletion; the SARI simplification papers report, not a mean of sentence "
            "SARIs.",
        },
    )
)
