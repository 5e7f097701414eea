import math

import pytest
import sacrebleu

from evaluation.metrics.diversity import (
    one_minus_self_bleu,
    self_bleu,
    semantic_diversity,
    template_diversity,
    type_token_ratio,
)
from evaluation.metrics.registry import MetricRecord, compute_all


def test_template_diversity_counts_distinct_outputs():
    assert (
        template_diversity(["No acute findings.", "No  acute findings. ", "Small effusion.", "Clear."])
        == 0.75
    )
    assert template_diversity([]) is None


def test_type_token_ratio_over_the_corpus():
    # tokens: the lung is clear the lung -> 6 tokens, 4 types; "1.2" stays one token
    assert type_token_ratio(["The lung is clear.", "the lung"]) == pytest.approx(4 / 6)
    assert type_token_ratio(["1.2 cm", "1.2 cm"]) == pytest.approx(2 / 4)
    assert type_token_ratio(["", "..."]) is None


def test_self_bleu_collapsed_and_diverse_corpora():
    collapsed = ["No acute cardiopulmonary process is seen today."] * 3
    assert self_bleu(collapsed) == pytest.approx(1.0)
    assert one_minus_self_bleu(collapsed) == pytest.approx(0.0)
    texts = [
        "the lungs are clear and the heart is normal",
        "the heart is normal",
        "a small effusion on the left",
    ]
    by_hand = [
        sacrebleu.sentence_bleu(texts[i], [t for j, t in enumerate(texts) if j != i]).score / 100
        for i in range(3)
    ]
    assert self_bleu(texts) == pytest.approx(sum(by_hand) / 3)
    assert self_bleu(["only one"]) is None


def test_semantic_diversity_worked_by_hand(toy_embedder):
    s = 1 / math.sqrt(2)
    embedder = toy_embedder({"one": [1.0, 0.0], "two": [0.0, 1.0], "both": [s, s]})
    # pairwise cosines 0, 1/sqrt2, 1/sqrt2
    assert semantic_diversity(["one", "two", "both"], embedder=embedder) == pytest.approx(
        1 - math.sqrt(2) / 3
    )
    assert semantic_diversity(["one", "one"], embedder=embedder) == pytest.approx(0.0)


def test_family_is_per_system(toy_embedder):
    embedder = toy_embedder({"Same.": [1.0, 0.0], "Other.": [0.0, 1.0]})
    records = [
        MetricRecord(source_text="x", candidate_text="Same.", system="greedy"),
        MetricRecord(source_text="y", candidate_text="Same.", system="greedy"),
        MetricRecord(source_text="x", candidate_text="Same.", system="sampled"),
        MetricRecord(source_text="y", candidate_text="Other.", system="sampled"),
    ]
    report = compute_all(records, families=["diversity"], embedder=embedder)
    assert report.texts == [{}, {}, {}, {}]
    assert report.systems["greedy"]["template_diversity"] == 0.5
    assert report.systems["greedy"]["semantic_diversity"] == pytest.approx(0.0)
    assert report.systems["sampled"]["template_diversity"] == 1.0
    assert report.systems["sampled"]["semantic_diversity"] == pytest.approx(1.0)
    without = compute_all(records, families=["diversity"])
    assert without.systems["greedy"]["semantic_diversity"] is None
    assert without.systems["greedy"]["type_token_ratio"] == 0.5
    assert "embedder" in without.unavailable["semantic_diversity"]
