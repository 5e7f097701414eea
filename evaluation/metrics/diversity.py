"""Textual diversity of a system's outputs (seed 004, following Guo et al. 2024).

Corpus-level, per system: template diversity (share of distinct outputs), type-token
ratio over the whole corpus, 1 - self-BLEU (sacrebleu; each output against all the
others as references) and semantic diversity (1 - mean pairwise cosine of the
outputs' embeddings). All are fractions in 0-1 (the seed prints them as %).
Template collapse shows as low values on every one of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import sacrebleu

from evaluation.metrics.registry import (
    Embedder,
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricValue,
    register,
)
from evaluation.metrics.semantic import embed_texts

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
    """Mean sentence BLEU (0-1) of each output against all the other outputs."""
    if len(texts) < 2:
        return None
    scores = [
        sacrebleu.sentence_bleu(text, [other for j, other in enumerate(texts) if j != i]).score / 100
        for i, text in enumerate(texts)
    ]
    return float(np.mean(scores))


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


def _corpus(records: Sequence[MetricRecord], context: MetricContext) -> dict[str, MetricValue]:
    texts = [record.candidate_text for record in records]
    return {
        "template_diversity": template_diversity(texts),
        "type_token_ratio": type_token_ratio(texts),
        "one_minus_self_bleu": one_minus_self_bleu(texts),
        "semantic_diversity": semantic_diversity(texts, embedder=context.embedder)
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
