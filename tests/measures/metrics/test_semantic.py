import math

import numpy as np
import pytest

from measures.metrics.registry import MetricRecord, compute_all
from measures.metrics.semantic import (
    DEFAULT_THETA,
    THETA_BY_EMBEDDER,
    SentencePool,
    calibrate_theta,
    calibration_pairs,
    semantic_match,
    semantic_matches,
    text_similarities,
    theta_for,
)

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
    from measures.metrics.registry import MetricRecord, compute_all

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


def test_pool_leaves_a_sentence_without_positively_similar_pool_sentence(toy_embedder):
    # Algorithm 2 starts from max_sim = 0 and replaces only on sim > max_sim.
    embedder = toy_embedder(
        {
            "Xray.": [1.0, 0.0, 0.0],
            "Zulu.": [0.0, 0.0, 1.0],  # orthogonal to both pool sentences
            "Pool one.": [0.6, 0.8, 0.0],
            "Pool two.": [0.6, 0.8, 0.0],  # tied with Pool one: the first is kept
            "Lay one.": [0.0, 1.0, 0.0],
            "Lay two.": [0.0, 1.0, 0.0],
        }
    )
    pool = SentencePool(["Pool one.", "Pool two."], ["Lay one.", "Lay two."])
    vectors = np.array([embedder.vectors["Xray."], embedder.vectors["Zulu."]])
    nearest, replaced = pool.replace(vectors, embedder)
    assert list(nearest) == [0, -1]
    assert replaced[0] == pytest.approx(embedder.vectors["Lay one."])
    assert replaced[1] == pytest.approx(embedder.vectors["Zulu."])
    # Zulu stays itself, so it matches itself and not the lay sentence Xray became.
    assert semantic_match("Zulu.", "Zulu.", embedder=embedder, pool=pool, theta=0.8).proportion == 1.0
    assert semantic_match("Zulu.", "Xray.", embedder=embedder, pool=pool, theta=0.8).proportion == 0.0


class NamedToy:
    """A toy embedder that names its model like ml.embeddings.Embedder does."""

    def __init__(self, toy, model_id):
        self.toy, self.model_id = toy, model_id

    def __call__(self, texts):
        return self.toy(texts)


def test_theta_is_per_embedder_and_reported_with_the_values(toy_embedder):
    assert theta_for(NamedToy(None, "all-MiniLM-L6-v2@abc123"))[0] == THETA_BY_EMBEDDER["all-MiniLM-L6-v2"]
    assert theta_for(NamedToy(None, "some-other-model@1")) == (
        DEFAULT_THETA,
        "seed 000's value for GritLM (not calibrated for this embedder)",
    )
    assert theta_for(NamedToy(None, "all-MiniLM-L6-v2@1"), 0.7) == (0.7, "set by the caller")

    minilm_named = NamedToy(toy_embedder(VECTORS), "all-MiniLM-L6-v2@abc123")
    match = semantic_match("Beta. Gamma.", "Alpha.", embedder=minilm_named)
    assert match.theta == 0.85 and match.proportion == 0.0  # 0.8 < 0.85
    records = [
        MetricRecord(source_text="Alpha.", candidate_text="Beta.", reference_text="Alpha.", system="s")
    ]
    report = compute_all(records, families=["semantic"], embedder=minilm_named)
    assert report.systems["s"]["semantic_theta"] == 0.85
    assert report.settings["semantic"]["semantic_theta"] == 0.85
    assert report.settings["semantic"]["embedder"] == "all-MiniLM-L6-v2"
    chosen = compute_all(
        records, families=["semantic"], embedder=minilm_named, options={"semantic_theta": 0.8}
    )
    assert chosen.texts[0]["semantic_match"] == 1.0 and chosen.systems["s"]["semantic_theta"] == 0.8


def test_calibrate_theta_by_hand():
    # Perfectly separable: the cut halfway between the highest "different" and the lowest "same".
    assert calibrate_theta([0.1, 0.2, 0.7, 0.9], [False, False, True, True]) == (pytest.approx(0.45), 1.0)
    # Balanced accuracy, not plain accuracy: one "same" pair among many "different" ones counts as much.
    theta, accuracy = calibrate_theta([0.1, 0.2, 0.3, 0.4, 0.35], [False, False, False, False, True])
    assert accuracy == pytest.approx((1 + 3 / 4) / 2) and theta == pytest.approx(0.325)
    with pytest.raises(ValueError):
        calibrate_theta([0.1, 0.2], [True, True])


def test_minilm_default_theta_is_its_calibration_on_the_shipped_pairs(minilm_embedder):
    pairs = calibration_pairs()
    assert sum(1 for *_, same in pairs if same) >= 10 and sum(1 for *_, same in pairs if not same) >= 10
    left = minilm_embedder([p[0] for p in pairs])
    right = minilm_embedder([p[1] for p in pairs])
    similarities = (left * right).sum(axis=1)
    same = [p[2] for p in pairs]
    theta, accuracy = calibrate_theta(similarities, same)
    assert round(theta, 2) == THETA_BY_EMBEDDER["all-MiniLM-L6-v2"]

    def balanced(cut):
        predicted = similarities >= cut
        labels = np.asarray(same)
        return (predicted[labels].mean() + (~predicted[~labels]).mean()) / 2

    assert balanced(THETA_BY_EMBEDDER["all-MiniLM-L6-v2"]) == pytest.approx(accuracy)
    assert balanced(THETA_BY_EMBEDDER["all-MiniLM-L6-v2"]) > balanced(DEFAULT_THETA)
