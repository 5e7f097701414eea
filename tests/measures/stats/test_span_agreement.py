import itertools
import math

import pytest

from measures.stats.span_agreement import (
    Span,
    align_quoted_spans,
    character_f1,
    count_alpha,
    overlap_f1,
)

OMIT, WRONG = "omitted_finding", "wrong_finding_or_location"


def test_overlap_f1_by_hand():
    a = {1: [Span(0, 10, WRONG), Span(20, 30, WRONG), Span(40, 45, OMIT)], 2: [Span(5, 9, OMIT)]}
    b = {
        1: [Span(8, 12, WRONG), Span(40, 45, WRONG)],
        2: [Span(0, 4, OMIT), Span(8, 20, OMIT)],
        3: [Span(0, 1, OMIT)],
    }
    result = overlap_f1(a, b)
    # WRONG: A's (0,10) overlaps B's (8,12): 1 of 2 A spans matched; B: (8,12) matched, (40,45) not
    # (A's span there is another category): 1 of 2.
    assert result[WRONG]["precision"] == 0.5 and result[WRONG]["recall"] == 0.5 and result[WRONG]["f1"] == 0.5
    # OMIT (text 3 only in B, ignored): A (40,45) no OMIT partner, (5,9) overlaps (8,20): 1/2;
    # B: (0,4) does not touch (5,9), (8,20) does: 1/2.
    assert result[OMIT]["precision"] == 0.5 and result[OMIT]["recall"] == 0.5
    # All: matched A 2 of 4, matched B 2 of 4.
    assert result["all"]["f1"] == 0.5 and result["all"]["n_a"] == 4 and result["all"]["n_b"] == 4
    none = overlap_f1({1: []}, {1: [Span(0, 3, OMIT)]})
    assert none[OMIT]["precision"] is None and none[OMIT]["recall"] == 0.0 and none[OMIT]["f1"] is None
    with pytest.raises(ValueError, match="text 1"):
        overlap_f1({1: [Span(5, 5, OMIT)]}, {})


def test_character_f1_gives_partial_credit():
    result = character_f1({1: [Span(0, 10, WRONG)]}, {1: [Span(5, 25, WRONG)]})
    assert result[WRONG]["precision"] == pytest.approx(5 / 10)
    assert result[WRONG]["recall"] == pytest.approx(5 / 20)
    assert result[WRONG]["f1"] == pytest.approx(2 * 0.5 * 0.25 / 0.75)


def _interval_alpha_by_hand(a, b):
    # Krippendorff (2011) for two coders, no missing values: D_o from the coincidences within
    # units, D_e from every ordered pair of the n pooled values, alpha = 1 - D_o / D_e.
    values = a + b
    n = len(values)
    d_o = sum(2 * (x - y) ** 2 for x, y in zip(a, b, strict=True)) / n
    d_e = sum((x - y) ** 2 for x, y in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1 - d_o / d_e


def test_count_alpha_matches_a_hand_computation():
    spans_a = {1: [Span(0, 2, OMIT)], 2: [], 3: [Span(0, 2, OMIT), Span(3, 4, WRONG)], 4: [Span(1, 2, WRONG)]}
    spans_b = {1: [Span(0, 2, OMIT), Span(4, 6, OMIT)], 2: [], 3: [Span(0, 1, WRONG)], 4: [Span(1, 2, WRONG)]}
    alpha = count_alpha({"r1": spans_a, "r2": spans_b})
    assert alpha == pytest.approx(_interval_alpha_by_hand([1, 0, 2, 1], [2, 0, 1, 1]))
    omitted = count_alpha({"r1": spans_a, "r2": spans_b}, category=OMIT)
    assert omitted == pytest.approx(_interval_alpha_by_hand([1, 0, 1, 0], [2, 0, 0, 0]))
    assert math.isnan(count_alpha({"r1": {1: []}, "r2": {1: []}}))


def test_align_quoted_spans_exact_normalised_fuzzy_and_unmatched():
    text = "There is a small  Spot on the left kidney. The spot is nothing to worry about."
    quotes = [
        "the left kidney",
        "small spot",
        "nothing to wory about",
        "a large tumour in the liver",
        "The spot",
        "",
    ]
    aligned, unmatched = align_quoted_spans(text, quotes)
    by_index = {a.index: a for a in aligned}
    assert text[by_index[0].start : by_index[0].end] == "the left kidney" and by_index[0].method == "exact"
    assert text[by_index[1].start : by_index[1].end] == "small  Spot" and by_index[1].method == "normalised"
    assert (
        by_index[2].method == "fuzzy"
        and text[by_index[2].start : by_index[2].end] == "nothing to worry about."
    )
    assert by_index[2].ratio >= 0.85
    assert text[by_index[4].start : by_index[4].end] == "The spot"
    assert unmatched == [(3, "a large tumour in the liver"), (5, "")]


def test_repeated_quotes_take_successive_occurrences():
    aligned, unmatched = align_quoted_spans("no fluid, no fluid", ["no fluid", "no fluid", "no fluid"])
    assert [(a.start, a.end) for a in aligned] == [(0, 8), (10, 18)]
    assert [a.method for a in aligned] == ["exact", "exact"]
    # The third has no free occurrence left: reported, not stacked on an occurrence already taken.
    assert unmatched == [(2, "no fluid")]
