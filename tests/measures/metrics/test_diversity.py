import math
import random

import numpy as np
import pytest
import sacrebleu

from measures.metrics.diversity import (
    _sentence_bleu_scores,
    _sentence_bleu_statistics,
    one_minus_self_bleu,
    self_bleu,
    semantic_diversity,
    template_diversity,
    type_token_ratio,
)
from measures.metrics.registry import MetricRecord, compute_all


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


def corpora():
    """Small corpora with what changes sacrebleu's multi-reference statistics: repeated outputs
    (a text is its own reference through its copies), shared n-grams held at their maximum count
    by one output or by several, empty outputs, length ties for the closest reference length."""
    rng = random.Random(7)
    words = "the a lung lungs heart is are clear normal small effusion left , . 1.2 cm no acute".split()
    yield ["the heart is normal", "the heart is normal", "the lung is clear"]
    yield ["a a a b", "a a b", "c", ""]
    yield ["", ""]
    yield ["one two three", "one two", "one two three four five", "x y z w"]
    for _ in range(150):
        pool = [
            " ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 8))
        ]
        yield [rng.choice(pool) for _ in range(rng.randint(2, 10))]


def test_self_bleu_equals_sacrebleu_sentence_bleu_against_all_other_outputs():
    for texts in corpora():
        by_hand = [
            sacrebleu.sentence_bleu(text, [other for j, other in enumerate(texts) if j != i])
            for i, text in enumerate(texts)
        ]
        # The same floating-point operations as sacrebleu, so the same value, not a close one.
        assert self_bleu(texts) == float(np.mean([score.score / 100 for score in by_hand])), texts


def test_self_bleu_statistics_equal_sacrebleu_per_output():
    for texts in corpora():
        index = {text: i for i, text in enumerate(dict.fromkeys(texts))}
        distinct = list(index)
        multiplicity = np.bincount([index[text] for text in texts], minlength=len(distinct))
        correct, total, lengths, closest = _sentence_bleu_statistics(distinct, multiplicity)
        for t, text in enumerate(distinct):
            others = list(texts)
            others.remove(text)
            score = sacrebleu.sentence_bleu(text, others)
            assert list(correct[t]) == score.counts and list(total[t]) == score.totals, (text, texts)
            assert (lengths[t], closest[t]) == (score.sys_len, score.ref_len), (text, texts)


def test_self_bleu_statistics_of_a_larger_corpus_against_sacrebleu_on_sampled_outputs():
    # 3000 outputs, every one of them twice: each sampled output's BLEU against the 2999 others.
    texts = [
        f"There is a small {('spot', 'cyst', 'stone')[i % 3]} in your liver ({i % 499})." for i in range(3000)
    ]
    index = {text: i for i, text in enumerate(dict.fromkeys(texts))}
    multiplicity = np.bincount([index[text] for text in texts], minlength=len(index))
    statistics = _sentence_bleu_statistics(list(index), multiplicity)
    scores = _sentence_bleu_scores(*statistics)
    for i in np.random.default_rng(0).choice(len(texts), 3, replace=False):
        score = sacrebleu.sentence_bleu(texts[i], texts[:i] + texts[i + 1 :])
        t = index[texts[i]]
        assert list(statistics[0][t]) == score.counts and list(statistics[1][t]) == score.totals
        assert scores[t] == score.score / 100
    assert self_bleu(texts) == float(np.mean(scores[[index[text] for text in texts]]))
