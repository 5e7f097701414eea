"""The adjudication queue's disagreement measures against independent computations: numpy's ptp for
the ordinal spread, pandas' value counts for the categories, NLTK's MASI distance for sets, and a
character-array overlap test written here for spans."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pandas as pd
import pytest
from nltk.metrics.distance import masi_distance as nltk_masi

from measures.stats.disagreement import (
    ADJUDICATED,
    AGREEMENT,
    SINGLE_RATER,
    UNRESOLVED,
    agreement_before_after,
    category_disagreement,
    final_label,
    ordinal_disagreement,
    set_disagreement,
    span_disagreement,
)
from measures.stats.span_agreement import Span


@pytest.mark.parametrize("seed", range(20))
def test_ordinal_spread_is_the_range_over_the_scale(seed):
    rng = random.Random(seed)
    values = [rng.randint(1, 5) for _ in range(rng.randint(2, 6))]
    got = ordinal_disagreement(values, lowest=1, highest=5)
    assert got.score == pytest.approx(np.ptp(np.array(values)) / 4)
    assert got.unanimous == (len(set(values)) == 1)


def test_not_applicable_beside_a_code_is_the_largest_disagreement():
    assert ordinal_disagreement([3, "not_applicable"], lowest=1, highest=5).score == 1
    assert ordinal_disagreement(["not_applicable"] * 3, lowest=1, highest=5).score == 0
    with pytest.raises(ValueError, match="outside the scale"):
        ordinal_disagreement([0, 3], lowest=1, highest=5)
    with pytest.raises(ValueError, match="at least two"):
        ordinal_disagreement([3], lowest=1, highest=5)


@pytest.mark.parametrize("seed", range(20))
def test_category_score_and_majority_match_pandas(seed):
    rng = random.Random(seed)
    values = [rng.choice("abc") for _ in range(rng.randint(2, 7))]
    counts = pd.Series(values).value_counts()
    n = len(values)
    got = category_disagreement(values)
    assert got.score == pytest.approx((1 - counts.iloc[0] / n) / (1 - 1 / n))
    expected_majority = counts.index[0] if counts.iloc[0] > n / 2 else None
    assert got.majority == expected_majority


def test_an_even_split_has_no_majority_and_scores_one():
    got = category_disagreement(["a", "b"])
    assert got.majority is None and got.score == 1
    assert category_disagreement(["a", "a", "b"]).majority == "a"


@pytest.mark.parametrize("seed", range(10))
def test_set_disagreement_is_the_mean_nltk_masi(seed):
    rng = random.Random(seed)
    values = [frozenset(rng.sample("abcd", rng.randint(1, 3))) for _ in range(rng.randint(2, 5))]
    pairs = list(itertools.combinations(values, 2))
    expected = sum(nltk_masi(set(a), set(b)) for a, b in pairs) / len(pairs)
    assert set_disagreement(values).score == pytest.approx(expected)


def _reference_f1(a, b) -> float:
    """Overlap F1 over all categories from character masks: a span is matched when a span of the
    same category on the other side shares a character with it."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    length = max(s.end for s in [*a, *b])

    def mask(spans, category):
        out = np.zeros(length, dtype=bool)
        for s in spans:
            if s.category == category:
                out[s.start : s.end] = True
        return out

    def matched(mine, theirs):
        return sum(bool(mask(theirs, s.category)[s.start : s.end].any()) for s in mine)

    precision = matched(a, b) / len(a)
    recall = matched(b, a) / len(b)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


@pytest.mark.parametrize("seed", range(20))
def test_span_disagreement_is_one_minus_mean_pair_overlap_f1(seed):
    rng = random.Random(seed)

    def spans():
        out = []
        for _ in range(rng.randint(0, 3)):
            start = rng.randint(0, 40)
            out.append(Span(start, start + rng.randint(1, 8), rng.choice(["omission", "wrong"]), "minor"))
        return out

    raters = [spans() for _ in range(rng.randint(2, 4))]
    pairs = list(itertools.combinations(raters, 2))
    expected = 1 - sum(_reference_f1(a, b) for a, b in pairs) / len(pairs)
    assert span_disagreement(raters).score == pytest.approx(expected)


def test_final_labels_say_where_they_come_from():
    assert final_label([4]) == (4, SINGLE_RATER)
    assert final_label([4, 4]) == (4, AGREEMENT)
    assert final_label([2, 4]).provenance == UNRESOLVED and final_label([2, 4]).value is None
    assert final_label([2, 4], adjudicated=3, has_adjudication=True) == (3, ADJUDICATED)


def test_agreement_before_and_after_by_hand():
    units = [
        ([("r1", 4), ("r2", 4)], None, False),  # agreed
        ([("r1", 2), ("r2", 5)], 5, True),  # adjudicated: r2 was right
        ([("r1", 1), ("r2", 3)], None, False),  # unresolved
        ([("r1", 3)], None, False),  # single rater: not counted
    ]
    got = agreement_before_after(units)
    assert got.units == 3 and got.adjudicated == 1
    assert got.unanimous_share == pytest.approx(1 / 3)
    assert got.resolved_share == pytest.approx(2 / 3)
    assert got.rater_accuracy_before == 1.0
    # after: r1 1 of 2, r2 2 of 2 -> mean 0.75
    assert got.rater_accuracy_after == pytest.approx(0.75)
