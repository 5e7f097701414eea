"""Semantic match proportion (seed 000, section 3.2 and Algorithm 2).

Candidate and reference are split into sentences and embedded; a candidate sentence
is matched when its cosine similarity to some reference sentence is at least theta
(0.8 in the seed). The score is the share of matched candidate sentences; we also
report the share of reference sentences some candidate sentence matches (the seed
computes "the proportion of matched sentences in both the candidate and reference").
Algorithm 2 first replaces every sentence by the lay version of its nearest
neighbour in a sentence pool; :class:`SentencePool` does that when given.

The embedder is passed in (``encode(list[str]) -> (n, d)`` normalised array, e.g.
ml/embeddings.py's), so this module loads no model. All sentences of a batch are
embedded in one call, and each pair costs one matrix product.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluation.metrics.registry import (
    Embedder,
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricValue,
    register,
)
from evaluation.metrics.sentences import split_sentences

__all__ = [
    "DEFAULT_THETA",
    "SemanticMatch",
    "SentencePool",
    "embed_texts",
    "semantic_match",
    "semantic_matches",
    "text_similarities",
]

DEFAULT_THETA = 0.8


def embed_texts(texts: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Embed ``texts`` in one call, as float64 rows of unit length.

    Rows are re-normalised only when the embedder did not normalise them (a real
    model's float32 output), so exact toy vectors keep their exact cosines."""
    if not texts:
        return np.zeros((0, 0))
    vectors = np.asarray(embedder(list(texts)), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"embedder returned shape {vectors.shape} for {len(texts)} texts")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(np.abs(norms - 1.0) > 1e-6):
        vectors = vectors / np.where(norms == 0, 1.0, norms)
    return vectors


@dataclass
class SentencePool:
    """Algorithm 2's sentence-level dataset S: each sentence has a lay rendering
    (Layman-Term(s_j)); without ``replacements`` a sentence stands for itself."""

    sentences: Sequence[str]
    replacements: Sequence[str] | None = None
    # Keyed by the embedder itself, not id(): bound methods are re-created on each access.
    _cache: dict[Embedder, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.sentences:
            raise ValueError("a sentence pool needs at least one sentence")
        if self.replacements is not None and len(self.replacements) != len(self.sentences):
            raise ValueError("replacements must align with sentences")

    def replacement_texts(self) -> list[str]:
        return list(self.replacements if self.replacements is not None else self.sentences)

    def embeddings(self, embedder: Embedder) -> tuple[np.ndarray, np.ndarray]:
        """(pool sentence embeddings, replacement embeddings), computed once per embedder."""
        if embedder not in self._cache:
            pool = embed_texts(self.sentences, embedder)
            replaced = pool if self.replacements is None else embed_texts(self.replacement_texts(), embedder)
            self._cache[embedder] = (pool, replaced)
        return self._cache[embedder]

    def replace(self, vectors: np.ndarray, embedder: Embedder) -> tuple[np.ndarray, np.ndarray]:
        """Nearest pool sentence of each row of ``vectors``: (its index, its replacement's embedding)."""
        pool, replaced = self.embeddings(embedder)
        nearest = np.argmax(vectors @ pool.T, axis=1)
        return nearest, replaced[nearest]


@dataclass(frozen=True)
class SemanticMatch:
    """Result for one candidate/reference pair."""

    proportion: float | None  # matched candidate sentences / candidate sentences (Algorithm 2)
    reference_proportion: float | None  # reference sentences matched by some candidate sentence
    candidate_sentences: tuple[str, ...]
    reference_sentences: tuple[str, ...]
    best_similarity: tuple[float, ...]  # per candidate sentence: max cosine to the reference


class _EmbeddingTable:
    """Each distinct text of a batch embedded once, in a single embedder call."""

    def __init__(self, texts: Sequence[str], embedder: Embedder) -> None:
        self.index: dict[str, int] = {}
        for text in texts:
            self.index.setdefault(text, len(self.index))
        self.vectors = embed_texts(list(self.index), embedder) if self.index else np.zeros((0, 0))

    def rows(self, texts: Sequence[str]) -> np.ndarray:
        return self.vectors[[self.index[text] for text in texts]]


def _match_pairs(
    split_candidates: Sequence[Sequence[str]],
    split_references: Sequence[Sequence[str]],
    sentence_vector: dict[str, np.ndarray],
    theta: float,
) -> list[SemanticMatch]:
    results = []
    for cand_sentences, ref_sentences in zip(split_candidates, split_references, strict=True):
        if not cand_sentences or not ref_sentences:
            # A proportion over no sentences is undefined; against an empty text nothing matches.
            results.append(
                SemanticMatch(
                    proportion=None if not cand_sentences else 0.0,
                    reference_proportion=None if not ref_sentences else 0.0,
                    candidate_sentences=tuple(cand_sentences),
                    reference_sentences=tuple(ref_sentences),
                    best_similarity=(),
                )
            )
            continue
        cand = np.stack([sentence_vector[s] for s in cand_sentences])
        ref = np.stack([sentence_vector[s] for s in ref_sentences])
        similarity = cand @ ref.T
        best_for_candidate = similarity.max(axis=1)
        best_for_reference = similarity.max(axis=0)
        results.append(
            SemanticMatch(
                proportion=float(np.mean(best_for_candidate >= theta)),
                reference_proportion=float(np.mean(best_for_reference >= theta)),
                candidate_sentences=tuple(cand_sentences),
                reference_sentences=tuple(ref_sentences),
                best_similarity=tuple(float(v) for v in best_for_candidate),
            )
        )
    return results


def _sentence_vectors(
    sentences: Sequence[str], table: _EmbeddingTable, embedder: Embedder, pool: SentencePool | None
) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(sentences))
    if not unique:
        return {}
    vectors = table.rows(unique)
    if pool is not None:
        _, vectors = pool.replace(vectors, embedder)
    return dict(zip(unique, vectors, strict=True))


def semantic_matches(
    candidates: Sequence[str],
    references: Sequence[str],
    *,
    embedder: Embedder,
    theta: float = DEFAULT_THETA,
    pool: SentencePool | None = None,
) -> list[SemanticMatch]:
    """Semantic match of each ``candidates[i]`` against ``references[i]``.

    A proportion is None when its own text has no sentence, and 0 when only the other
    text is empty."""
    if len(candidates) != len(references):
        raise ValueError("candidates and references must align")
    split_candidates = [split_sentences(text) for text in candidates]
    split_references = [split_sentences(text) for text in references]
    sentences = [s for group in (*split_candidates, *split_references) for s in group]
    table = _EmbeddingTable(sentences, embedder)
    vectors = _sentence_vectors(sentences, table, embedder, pool)
    return _match_pairs(split_candidates, split_references, vectors, theta)


def semantic_match(
    candidate: str,
    reference: str,
    *,
    embedder: Embedder,
    theta: float = DEFAULT_THETA,
    pool: SentencePool | None = None,
) -> SemanticMatch:
    """Semantic match of one candidate against one reference."""
    return semantic_matches([candidate], [reference], embedder=embedder, theta=theta, pool=pool)[0]


def _pair_cosines(lefts: Sequence[str], rights: Sequence[str], table: _EmbeddingTable) -> list[float | None]:
    return [
        float(table.rows([left])[0] @ table.rows([right])[0]) if left.strip() and right.strip() else None
        for left, right in zip(lefts, rights, strict=True)
    ]


def text_similarities(
    lefts: Sequence[str], rights: Sequence[str], *, embedder: Embedder
) -> list[float | None]:
    """Cosine similarity of whole texts, pairwise (seed 000 Algorithm 1's
    Semantic-Similarity(d_i, t_i) between an original and its translation)."""
    if len(lefts) != len(rights):
        raise ValueError("lefts and rights must align")
    table = _EmbeddingTable([text for text in (*lefts, *rights) if text.strip()], embedder)
    return _pair_cosines(lefts, rights, table)


def _texts(records: Sequence[MetricRecord], context: MetricContext) -> list[dict[str, MetricValue]]:
    embedder = context.embedder
    assert embedder is not None  # the registry does not call an embeddings family without one
    theta = float(context.option("semantic_theta", DEFAULT_THETA))
    pool: SentencePool | None = context.option("semantic_pool")
    candidates = [split_sentences(record.candidate_text) for record in records]
    sources = [split_sentences(record.source_text) for record in records]
    with_reference = [i for i, record in enumerate(records) if record.reference_text]
    references = {i: split_sentences(records[i].reference_text or "") for i in with_reference}
    sentences = [s for group in (*candidates, *sources, *references.values()) for s in group]
    wholes = [text for r in records for text in (r.source_text, r.candidate_text) if text.strip()]
    # One embedder call for every sentence and whole text of the batch.
    table = _EmbeddingTable([*sentences, *wholes], embedder)
    vectors = _sentence_vectors(sentences, table, embedder, pool)

    against_source = _match_pairs(candidates, sources, vectors, theta)
    against_reference = _match_pairs(
        [candidates[i] for i in with_reference], [references[i] for i in with_reference], vectors, theta
    )
    whole = _pair_cosines([r.source_text for r in records], [r.candidate_text for r in records], table)
    rows: list[dict[str, MetricValue]] = [
        {
            "semantic_match": None,
            "semantic_match_reference_recall": None,
            "semantic_match_source": match.proportion,
            "semantic_similarity_source": similarity,
        }
        for match, similarity in zip(against_source, whole, strict=True)
    ]
    for i, match in zip(with_reference, against_reference, strict=True):
        rows[i]["semantic_match"] = match.proportion
        rows[i]["semantic_match_reference_recall"] = match.reference_proportion
    return rows


def _unavailable(context: MetricContext) -> dict[str, str]:
    if context.reference_available:
        return {}
    reason = "needs a reference system's text; semantic_match_source matches against the original instead"
    return {"semantic_match": reason, "semantic_match_reference_recall": reason}


FAMILY = register(
    MetricFamily(
        name="semantic",
        description="Seed 000 semantic match proportion (sentence cosine >= semantic_theta, default 0.8; "
        "optional semantic_pool: SentencePool for Algorithm 2's replacement step) against the reference, "
        "and against the source sentences; plus whole-text cosine with the source.",
        text_metrics=(
            "semantic_match",
            "semantic_match_reference_recall",
            "semantic_match_source",
            "semantic_similarity_source",
        ),
        compute_texts=_texts,
        needs_source=True,
        needs_embeddings=True,
        unavailable=_unavailable,
    )
)
