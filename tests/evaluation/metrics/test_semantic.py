import math

import numpy as np
import pytest

from evaluation.metrics.registry import MetricRecord, compute_all
from evaluation.metrics.semantic import SentencePool, semantic_match, semantic_matches, text_similarities

# Unit vectors whose cosines with Alpha are exact in binary floating point: 0.8 and 0.75.
VECTORS = {
    "Alpha.": [1.0, 0.0, 0.0],
    "Beta.": [0.8, 0.6, 0.0],  # cos(Alpha, Beta) = 0.8 exactly
    "Gamma.": [0.75, 0.0, math.sqrt(1 - 0.75**2)],  # cos(Alpha, Gamma) = 0.75
    "Delta.": [0.0, 0.0, 1.0],
}


def test_threshold_is_inclusive_and_exact(toy_embedder):
    embedder = toy_embedder(VECTORS)
    match = semantic_match("Beta. Gamma.", "Alpha.", embedder=embedder)
    assert match.candidate_sentences == ("Beta.", "Gamma.")
    assert match.best_similarity == (0.8, 0.75)
    assert match.proportion == 0.5  # B reaches theta = 0.8 exactly, C does not
    assert semantic_match("Beta. Gamma.", "Alpha.", embedder=embedder, theta=0.75).proportion == 1.0
    assert (
        semantic_match("Beta. Gamma.", "Alpha.", embedder=embedder, theta=np.nextafter(0.8, 1)).proportion
        == 0.0
    )


def test_best_match_over_all_reference_sentences_and_reference_side(toy_embedder):
    embedder = toy_embedder(VECTORS)
    # C is 0.75 from A but identical to nothing else; D matches Delta.
    match = semantic_match("Gamma. Delta.", "Alpha. Delta. Beta.", embedder=embedder, theta=0.8)
    assert match.proportion == 0.5
    # Reference side: Alpha (best 0.75, from Gamma) no, Delta yes, Beta (best 0.6, from Gamma) no.
    assert match.reference_proportion == pytest.approx(1 / 3)


def test_empty_texts(toy_embedder):
    embedder = toy_embedder(VECTORS)
    empty_candidate = semantic_match("", "Alpha.", embedder=embedder)
    assert empty_candidate.proportion is None and empty_candidate.reference_proportion == 0.0
    assert semantic_match("Alpha.", " ", embedder=embedder).proportion == 0.0


def test_batch_embeds_every_distinct_sentence_once(toy_embedder):
    embedder = toy_embedder(VECTORS)
    results = semantic_matches(
        ["Alpha. Beta.", "Beta. Delta."], ["Alpha.", "Beta. Alpha."], embedder=embedder
    )
    assert len(embedder.calls) == 1
    assert sorted(embedder.calls[0]) == ["Alpha.", "Beta.", "Delta."]
    assert [r.proportion for r in results] == [1.0, 0.5]


def test_pool_replaces_sentences_by_their_neighbours_lay_version(toy_embedder):
    embedder = toy_embedder(
        {
            "Xray.": [0.9, math.sqrt(1 - 0.81), 0.0],
            "Yankee.": [0.1, math.sqrt(1 - 0.01), 0.0],
            "Pool one.": [1.0, 0.0, 0.0],
            "Pool two.": [0.0, 1.0, 0.0],
            "Lay one.": [0.0, 0.0, 1.0],
            "Lay two.": [0.0, 0.0, 1.0],
        }
    )
    # Directly, X and Y are far apart (cos ~ 0.53).
    assert semantic_match("Xray.", "Yankee.", embedder=embedder).proportion == 0.0
    # X -> Pool one -> "Lay one.", Y -> Pool two -> "Lay two."; both lay versions coincide.
    pool = SentencePool(["Pool one.", "Pool two."], ["Lay one.", "Lay two."])
    nearest, _ = pool.replace(np.array([embedder.vectors["Xray."], embedder.vectors["Yankee."]]), embedder)
    assert list(nearest) == [0, 1]
    assert semantic_match("Xray.", "Yankee.", embedder=embedder, pool=pool).proportion == 1.0
    # Without lay versions a pool sentence stands for itself: X and Y stay apart.
    assert (
        semantic_match(
            "Xray.", "Yankee.", embedder=embedder, pool=SentencePool(["Pool one.", "Pool two."])
        ).proportion
        == 0.0
    )


def test_unnormalised_embeddings_are_normalised(toy_embedder):
    embedder = toy_embedder({"Alpha.": [2.0, 0.0], "Beta.": [1.6, 1.2]})
    assert semantic_match("Beta.", "Alpha.", embedder=embedder).best_similarity == (pytest.approx(0.8),)


def test_real_model_similarities_match_direct_cosines(minilm_embedder):
    candidate = "The heart is normal in size. There is no collapsed lung."
    reference = "Heart size is normal. No pneumothorax is seen. The bones are intact."
    match = semantic_match(candidate, reference, embedder=minilm_embedder)
    cand = minilm_embedder(list(match.candidate_sentences))
    ref = minilm_embedder(list(match.reference_sentences))
    expected = (cand @ ref.T).max(axis=1)
    assert match.best_similarity == pytest.approx(tuple(expected), abs=1e-5)
    assert match.proportion == float(np.mean(expected >= 0.8))
    related, unrelated = text_similarities(
        ["The heart is enlarged.", "The heart is enlarged."],
        ["The heart is bigger than normal.", "Please pay at the parking machine."],
        embedder=minilm_embedder,
    )
    assert related > unrelated


def test_family_against_reference_and_source(toy_embedder):
    embedder = toy_embedder({**VECTORS, "Alpha. Delta.": [0.6, 0.0, 0.8], "Beta. Delta.": [0.6, 0.0, 0.8]})
    records = [
        MetricRecord(source_text="Alpha. Delta.", candidate_text="Beta. Delta.", reference_text="Alpha."),
        MetricRecord(source_text="Alpha. Delta.", candidate_text="Beta. Delta."),
    ]
    report = compute_all(records, families=["semantic"], embedder=embedder)
    assert len(embedder.calls) == 1
    assert report.texts[0] == {
        "semantic_match": 0.5,
        "semantic_match_reference_recall": 1.0,
        "semantic_match_source": 1.0,
        "semantic_similarity_source": 1.0,
    }
    assert report.texts[1]["semantic_match"] is None
    assert report.texts[1]["semantic_match_source"] == 1.0
    stricter = compute_all(
        records, families=["semantic"], embedder=embedder, options={"semantic_theta": 0.85}
    )
    assert stricter.texts[0]["semantic_match"] == 0.0
    assert stricter.texts[0]["semantic_match_source"] == 0.5


def test_family_without_embedder_reports_why(toy_embedder):
    report = compute_all([MetricRecord(source_text="Alpha.", candidate_text="Beta.")], families=["semantic"])
    assert report.texts[0]["semantic_match_source"] is None
    assert "embedder" in report.unavailable["semantic_match_source"]


def test_without_a_reference_the_reference_pair_says_why_and_the_source_pair_is_computed(toy_embedder):
    from evaluation.metrics.registry import MetricRecord, compute_all

    embedder = toy_embedder({"The liver is fatty.": [1.0, 0.0], "There is fat in the liver.": [0.8, 0.6]})
    report = compute_all(
        [
            MetricRecord(
                source_text="The liver is fatty.", candidate_text="There is fat in the liver.", system="a"
            )
        ],
        families=["semantic"],
        embedder=embedder,
    )
    assert report.texts[0]["semantic_match"] is None
    assert "reference" in report.unavailable["semantic_match"]
    # cosine 0.8 >= theta 0.8: the one candidate sentence matches the source.
    assert report.texts[0]["semantic_match_source"] == 1.0
    assert "semantic_match_source" not in report.unavailable
