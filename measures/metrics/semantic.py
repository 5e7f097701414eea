"""Semantic match proportion (seed 000, section 3.2 and Algorithm 2).

Candidate and reference are split into sentences and embedded; a candidate sentence
is matched when its cosine similarity to some reference sentence is at least theta.
The score is the share of matched candidate sentences; we also report the share of
reference sentences some candidate sentence matches (the seed computes "the
proportion of matched sentences in both the candidate and reference"). Algorithm 2
first replaces every sentence by the lay version of its most similar sentence in a
sentence pool (the first of equals; a sentence with no positively similar pool
sentence stays as it is, since the algorithm starts from max_sim = 0 and replaces
only on sim > max_sim); :class:`SentencePool` does that when given.

Theta depends on the embedder: cosines of different models live on different scales.
Seed 000 set 0.8 for GritLM; for radlay's default all-MiniLM-L6-v2 the default is
0.85, calibrated on the sentence pairs of ``data/semantic_calibration.tsv`` (seed
000's Table 6 pairs and pairs written in their two styles) as the threshold with the
best balanced accuracy (:func:`calibrate_theta`; 0.75 there, against 0.67 at 0.8).
The option ``semantic_theta`` overrides it; the theta used is reported with the values
(corpus metric ``semantic_theta`` and the family's settings).

The embedder is passed in (``encode(list[str]) -> (n, d)`` normalised array, e.g.
ml/embeddings.py's), so this module loads no model. All sentences of a batch are
embedded in one call, and each pair costs one matrix product.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from measures.metrics.registry import (
    Embedder,
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricValue,
    register,
)
from measures.metrics.sentences import split_sentences

__all__ = [
    "CALIBRATION_PAIRS_PATH",
    "DEFAULT_THETA",
    "THETA_BY_EMBEDDER",
    "SemanticMatch",
    "calibrate_theta",
    "calibration_pairs",
    "embedder_name",
    "theta_for",
    "SentencePool",
    "embed_texts",
    "semantic_match",
    "semantic_matches",
    "text_similarities",
]

# Seed 000's threshold, set for GritLM; used for an embedder radlay has no calibration for.
DEFAULT_THETA = 0.8
THETA_BY_EMBEDDER: dict[str, float] = {"all-MiniLM-L6-v2": 0.85, "GritLM-7B": DEFAULT_THETA}
CALIBRATION_PAIRS_PATH = Path(__file__).resolve().parent / "data" / "semantic_calibration.tsv"


def embedder_name(embedder: Embedder | None) -> str:
    """The model name of an embedder (ml.embeddings.Embedder's ``model_id`` before its "@"), or ""."""
    model_id = getattr(embedder, "model_id", "") or getattr(embedder, "name", "") or ""
    return str(model_id).split("@", 1)[0]


def theta_for(embedder: Embedder | None, theta: float | None = None) -> tuple[float, str]:
    """(theta, where it comes from): the given value, else the embedder's calibrated default,
    else seed 000's 0.8."""
    if theta is not None:
        return float(theta), "set by the caller"
    name = embedder_name(embedder)
    if name in THETA_BY_EMBEDDER:
        return THETA_BY_EMBEDDER[name], f"radlay's default for {name}"
    return DEFAULT_THETA, "seed 000's value for GritLM (not calibrated for this embedder)"


def calibration_pairs(path: Path | None = None) -> list[tuple[str, str, bool]]:
    """(left, right, same meaning) rows of a calibration file (default: the shipped one)."""
    rows = []
    for line in (path or CALIBRATION_PAIRS_PATH).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            _, same, left, right = line.split("\t")
            rows.append((left, right, same.strip() == "1"))
    return rows


def calibrate_theta(similarities: Sequence[float], same: Sequence[bool]) -> tuple[float, float]:
    """(theta, balanced accuracy): the threshold between two neighbouring similarities that best
    separates same-meaning pairs (>= theta) from different-meaning ones; among equally good
    thresholds the one in the widest gap."""
    values = np.asarray(similarities, dtype=float)
    labels = np.asarray(same, dtype=bool)
    if values.shape != labels.shape or labels.all() or not labels.any():
        raise ValueError("calibration needs aligned similarities with both kinds of pair")
    ordered = np.unique(values)
    cuts = [(a + b) / 2 for a, b in zip(ordered[:-1], ordered[1:], strict=True)]
    gaps = [b - a for a, b in zip(ordered[:-1], ordered[1:], strict=True)]
    best = (-1.0, -1.0, 0.0)
    for cut, gap in zip(cuts, gaps, strict=True):
        predicted = values >= cut
        accuracy = (predicted[labels].mean() + (~predicted[~labels]).mean()) / 2
        if (accuracy, gap) > best[:2]:
            best = (float(accuracy), gap, float(cut))
    return best[2], best[0]


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
        """Algorithm 2, lines 3-13, for each row of ``vectors``: (index of the most similar pool
        sentence, or -1 when none is positively similar; the embedding the row is replaced by:
        that sentence's lay rendering, or the row itself when there is none)."""
        pool, replaced = self.embeddings(embedder)
        similarity = vectors @ pool.T
        nearest = np.argmax(similarity, axis=1)  # the first of equals, as "sim > max_sim" keeps it
        positive = similarity[np.arange(len(vectors)), nearest] > 0
        out = np.where(positive[:, None], replaced[nearest], vectors)
        return np.where(positive, nearest, -1), out


@dataclass(frozen=True)
class SemanticMatch:
    """Result for one candidate/reference pair."""

    proportion: float | None  # matched candidate sentences / candidate sentences (Algorithm 2)
    reference_proportion: float | None  # reference sentences matched by some candidate sentence
    candidate_sentences: tuple[str, ...]
    reference_sentences: tuple[str, ...]
    best_similarity: tuple[float, ...]  # per candidate sentence: max cosine to the reference
    theta: float = DEFAULT_THETA  # the threshold the proportions were computed with


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
                    theta=theta,
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
                theta=theta,
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
    theta: float | None = None,
    pool: SentencePool | None = None,
) -> list[SemanticMatch]:
    """Semantic match of each ``candidates[i]`` against ``references[i]``.

    ``theta`` defaults to the embedder's (:func:`theta_for`). A proportion is None when
    its own text has no sentence, and 0 when only the other text is empty."""
    theta, _ = theta_for(embedder, theta)
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
    theta: float | None = None,
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
    theta, _ = theta_for(embedder, context.option("semantic_theta"))
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


def _corpus(
    records: Sequence[MetricRecord], context: MetricContext, texts: Sequence[Mapping[str, MetricValue]]
) -> dict[str, MetricValue]:
    return {"semantic_theta": theta_for(context.embedder, context.option("semantic_theta"))[0]}


def _settings(context: MetricContext) -> dict[str, object]:
    theta, source = theta_for(context.embedder, context.option("semantic_theta"))
    return {"semantic_theta": theta, "theta_source": source, "embedder": embedder_name(context.embedder)}


FAMILY = register(
    MetricFamily(
        name="semantic",
        corpus_options=("semantic_theta",),
        version="1",
        text_options=("semantic_theta", "semantic_pool"),
        description="Seed 000 semantic match proportion (sentence cosine >= semantic_theta; default per "
        "embedder: 0.85 for all-MiniLM-L6-v2, calibrated on data/semantic_calibration.tsv, else seed 000's "
        "0.8; optional semantic_pool: SentencePool for Algorithm 2's replacement step) against the "
        "reference, and against the source sentences; plus whole-text cosine with the source.",
        text_metrics=(
            "semantic_match",
            "semantic_match_reference_recall",
            "semantic_match_source",
            "semantic_similarity_source",
        ),
        compute_texts=_texts,
        corpus_metrics=("semantic_theta",),
        compute_corpus=_corpus,
        needs_source=True,
        needs_embeddings=True,
        unavailable=_unavailable,
        settings=_settings,
        definitions={
            "semantic_match": "Semantic match proportion (seed 000, Algorithm 2): share of the text's "
            "sentences whose embedding cosine with some reference sentence is at least theta "
            "(semantic_theta, reported with the values).",
            "semantic_match_reference_recall": "Share of the reference's sentences whose cosine with "
            "some sentence of the text is at least theta.",
            "semantic_match_source": "Semantic match proportion against the original: share of the "
            "text's sentences whose cosine with some sentence of the original is at least theta.",
            "semantic_similarity_source": "Cosine similarity of the embeddings of the whole text and "
            "the whole original (seed 000, Algorithm 1's Semantic-Similarity).",
            "semantic_theta": "The cosine threshold theta the semantic match proportions of this system "
            "were computed with.",
        },
    )
)
