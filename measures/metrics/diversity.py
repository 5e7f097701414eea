"""Textual diversity of a system's outputs (seed 004, following Guo et al. 2024).

Corpus-level, per system: template diversity (share of distinct outputs), type-token
ratio over the whole corpus, 1 - self-BLEU (sacrebleu; each output against all the
others as references) and semantic diversity (1 - mean pairwise cosine of the
outputs' embeddings). All are fractions in 0-1 (the seed prints them as %).
Template collapse shows as low values on every one of them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np
import pandas as pd
import sacrebleu

from measures.metrics.registry import (
    Embedder,
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricValue,
    register,
)
from measures.metrics.semantic import embed_texts

__all__ = [
    "diversity_tokens",
    "one_minus_self_bleu",
    "self_bleu",
    "semantic_diversity",
    "template_diversity",
    "type_token_ratio",
]

_TOKEN = re.compile(r"\w+(?:[.'-]\w+)*")


def diversity_tokens(text: str) -> list[str]:
    """Lower-cased word tokens (numbers such as "1.2" stay one token)."""
    return _TOKEN.findall(text.lower())


def _normalised(text: str) -> str:
    return " ".join(text.split())


def template_diversity(texts: Sequence[str]) -> float | None:
    """Share of distinct outputs (whitespace-normalised, case kept)."""
    if not texts:
        return None
    return len({_normalised(text) for text in texts}) / len(texts)


def type_token_ratio(texts: Sequence[str]) -> float | None:
    """Distinct tokens over all tokens of the corpus (None without tokens)."""
    tokens = [token for text in texts for token in diversity_tokens(text)]
    if not tokens:
        return None
    return len(set(tokens)) / len(tokens)


def self_bleu(texts: Sequence[str]) -> float | None:
    """Mean sentence BLEU (0-1) of each output against all the other outputs.

    Equal to ``sacrebleu.sentence_bleu(texts[i], texts[:i] + texts[i + 1:]).score / 100``
    averaged over ``i`` (the default sentence BLEU: 13a tokens, n-grams up to 4, exp smoothing,
    effective order), computed in O(total n-grams) instead of O(outputs²): sacrebleu's multi-
    reference statistics only need, per n-gram, the largest count among the other outputs and,
    per output, the other outputs' length closest to its own (``_sentence_bleu_statistics``).
    """
    if len(texts) < 2:
        return None
    index: dict[str, int] = {}
    occurrence = np.fromiter((index.setdefault(text, len(index)) for text in texts), np.int64, len(texts))
    distinct = list(index)
    multiplicity = np.bincount(occurrence, minlength=len(distinct))
    correct, total, lengths, closest = _sentence_bleu_statistics(distinct, multiplicity)
    scores = _sentence_bleu_scores(correct, total, lengths, closest)
    return float(np.mean(scores[occurrence]))


# The sentence_bleu defaults; one instance, so sacrebleu's per-instance tokenizer cache is reused.
_SELF_BLEU = sacrebleu.BLEU(effective_order=True)


def _sentence_bleu_scores(
    correct: np.ndarray, total: np.ndarray, sys_len: np.ndarray, ref_len: np.ndarray
) -> np.ndarray:
    """``sacrebleu.BLEU.compute_bleu(...).score / 100`` of every row of statistics, with exp
    smoothing and effective order (sentence_bleu's defaults): the same floating-point operations
    in the same order, logarithms and exponentials by ``math``, so the same values, without one
    BLEUScore object per text."""
    rows, order = correct.shape
    smooth = np.ones(rows)
    effective = np.zeros(rows, dtype=np.int64)
    log_sum = np.zeros(rows)
    counting = np.ones(rows, dtype=bool)  # compute_bleu stops at the first order without n-grams
    for n in range(order):
        counting &= total[:, n] > 0
        effective[counting] = n + 1
        unmatched = counting & (correct[:, n] == 0)
        smooth[unmatched] *= 2
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(
                unmatched, 100.0 / (smooth * total[:, n]), 100.0 * correct[:, n] / total[:, n]
            )
        log_sum[counting] += np.fromiter(map(math.log, precision[counting]), np.float64)
    exponent = np.divide(log_sum, effective, out=np.zeros(rows), where=effective > 0)
    scores = np.fromiter(map(math.exp, exponent), np.float64, rows)
    short = (sys_len < ref_len) & (sys_len > 0)
    brevity = np.ones(rows)
    brevity[short] = np.fromiter(map(math.exp, 1 - ref_len[short] / sys_len[short]), np.float64)
    brevity[(sys_len < ref_len) & (sys_len == 0)] = 0.0
    scores = brevity * scores
    scores[~correct.any(axis=1)] = 0.0
    return scores / 100


def _sentence_bleu_statistics(
    texts: list[str], multiplicity: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """sacrebleu's sentence statistics of each distinct text (occurring ``multiplicity`` times in
    the corpus) against every other occurrence as references: (correct, total) n-gram counts per
    order (texts × max order), the text's length and the closest reference length.

    Against several references sacrebleu clips a hypothesis n-gram's count by its largest count
    in any one reference, so text t's clip is the largest count among the other occurrences: the
    corpus maximum, or the second largest (ties included) where t alone holds the maximum. The
    reference length is the other occurrences' length closest to t's, the shorter on a tie.
    """
    order = _SELF_BLEU.max_ngram_order
    words = [_SELF_BLEU._preprocess_segment(text).split() for text in texts]
    lengths = np.fromiter(map(len, words), np.int64, len(texts))
    token_ids, vocabulary = pd.factorize(np.fromiter(chain.from_iterable(words), object, int(lengths.sum())))
    token_ids = token_ids.astype(np.int64)
    owner = np.repeat(np.arange(len(texts)), lengths)
    position = np.arange(token_ids.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    room = lengths[owner] - position  # tokens from this one to the end of its text

    # Ids of the n-grams starting at each token, order by order: an n-gram is its (n-1)-gram
    # prefix and one more token, so (prefix id, token) pairs numbered by np.unique (int64 keys:
    # fewer prefixes than tokens, times the vocabulary). Ids of different orders do not overlap.
    n_words = max(vocabulary.size, 1)
    gram_ids, texts_of, orders_of = [], [], []
    prefix = token_ids
    next_id = n_words
    for n in range(1, order + 1):
        starts = np.flatnonzero(room >= n)
        if n == 1:
            ids = token_ids[starts]
        else:
            keys = prefix[starts] * n_words + token_ids[starts + n - 1]
            distinct, local = np.unique(keys, return_inverse=True)
            ids = local.ravel() + next_id
            next_id += distinct.size
            prefix = np.zeros(token_ids.size, dtype=np.int64)
            prefix[starts] = ids
        gram_ids.append(ids)
        texts_of.append(owner[starts])
        orders_of.append(np.full(starts.size, n - 1))
    gram_id = np.concatenate(gram_ids)
    gram_text = np.concatenate(texts_of)
    gram_order = np.concatenate(orders_of)
    correct = np.zeros((len(texts), order), dtype=np.int64)
    total = np.zeros((len(texts), order), dtype=np.int64)
    np.add.at(total, (gram_text, gram_order), 1)
    if gram_id.size:
        order_of_gram = np.empty(next_id, dtype=np.int64)
        order_of_gram[gram_id] = gram_order
        # One entry per (text, n-gram) with its count in that text.
        keys, count = np.unique(gram_id * len(texts) + gram_text, return_counts=True)
        entry_gram, entry_text = np.divmod(keys, len(texts))
        # Per n-gram, the counts of all occurrences in decreasing order: a text occurring m times
        # contributes m equal counts, so the two largest may come from one distinct text.
        by_count = np.lexsort((-count, entry_gram))
        sorted_gram, sorted_count = entry_gram[by_count], count[by_count]
        sorted_times = multiplicity[entry_text[by_count]]
        first = np.ones(sorted_gram.size, dtype=bool)
        first[1:] = sorted_gram[1:] != sorted_gram[:-1]
        top = np.zeros(next_id, dtype=np.int64)
        top[sorted_gram[first]] = sorted_count[first]
        # Second largest: the top entry again if it occurs twice or more, else the next entry
        # of the same n-gram (0 when there is none).
        second = np.zeros(next_id, dtype=np.int64)
        repeated_top = first & (sorted_times >= 2)
        second[sorted_gram[repeated_top]] = sorted_count[repeated_top]
        follows = np.zeros(sorted_gram.size, dtype=bool)
        follows[1:] = first[:-1] & ~first[1:] & (sorted_times[:-1] < 2)
        second[sorted_gram[follows]] = sorted_count[follows]
        holds_top = (count == top[entry_gram]) & (multiplicity[entry_text] < 2)
        clip = np.where(holds_top, second[entry_gram], top[entry_gram])
        np.add.at(correct, (entry_text, order_of_gram[entry_gram]), np.minimum(count, clip))
    return correct, total, lengths, _closest_other_length(lengths, multiplicity)


def _closest_other_length(lengths: np.ndarray, multiplicity: np.ndarray) -> np.ndarray:
    """Per distinct text, the length among the corpus's other occurrences closest to its own
    (sacrebleu's ``_get_closest_ref_len``: the shorter one on a tie)."""
    values, inverse = np.unique(lengths, return_inverse=True)
    occurrences = np.bincount(inverse, weights=multiplicity, minlength=values.size)
    own = values[inverse]
    # Its own length is taken by another occurrence (a copy of it or another text).
    shared = occurrences[inverse] >= 2
    below = np.where(inverse > 0, values[np.maximum(inverse - 1, 0)], -1)
    above = np.where(inverse < values.size - 1, values[np.minimum(inverse + 1, values.size - 1)], -1)
    take_below = (below >= 0) & ((above < 0) | (own - below <= above - own))
    return np.where(shared, own, np.where(take_below, below, above))


def one_minus_self_bleu(texts: Sequence[str]) -> float | None:
    value = self_bleu(texts)
    return None if value is None else 1 - value


def semantic_diversity(texts: Sequence[str], *, embedder: Embedder) -> float | None:
    """1 - mean cosine similarity over all pairs of outputs."""
    if len(texts) < 2:
        return None
    vectors = embed_texts(list(texts), embedder)
    similarity = vectors @ vectors.T
    upper = np.triu_indices(len(texts), k=1)
    return float(1 - similarity[upper].mean())


def _corpus(
    records: Sequence[MetricRecord], context: MetricContext, texts: Sequence[Mapping[str, MetricValue]]
) -> dict[str, MetricValue]:
    candidates = [record.candidate_text for record in records]
    return {
        "template_diversity": template_diversity(candidates),
        "type_token_ratio": type_token_ratio(candidates),
        "one_minus_self_bleu": one_minus_self_bleu(candidates),
        "semantic_diversity": semantic_diversity(candidates, embedder=context.embedder)
        if context.embedder
        else None,
    }


def _unavailable(context: MetricContext) -> dict[str, str]:
    return {} if context.embedder else {"semantic_diversity": "semantic diversity needs an embedder"}


FAMILY = register(
    MetricFamily(
        name="diversity",
        description="Seed 004 textual diversity per system: template diversity, type-token ratio, "
        "1 - self-BLEU, semantic diversity (with an embedder).",
        corpus_metrics=(
            "template_diversity",
            "type_token_ratio",
            "one_minus_self_bleu",
            "semantic_diversity",
        ),
        compute_corpus=_corpus,
        unavailable=_unavailable,
        definitions={
            "template_diversity": "Template diversity (seed 004): distinct outputs / outputs of a system.",
            "type_token_ratio": "Type-token ratio (seed 004): distinct tokens / tokens over all of a "
            "system's outputs.",
            "one_minus_self_bleu": "1 - self-BLEU (seed 004): one minus the mean sacrebleu BLEU (0-1) of "
            "each output against all the system's other outputs.",
            "semantic_diversity": "Semantic diversity (seed 004): 1 - mean pairwise cosine similarity of "
            "the outputs' sentence embeddings.",
        },
    )
)
