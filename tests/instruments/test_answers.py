"""Answers are checked against their item and coded for the analysis, kind by kind."""

import pytest

from instruments.answers import (
    ErrorSpan,
    InvalidAnswer,
    SentenceMatches,
    exclusive_overlaps,
    item_value_code,
    item_value_validate,
)
from instruments.presets import preset_load
from instruments.schema import NOT_APPLICABLE, AppliesTo, Item, ItemKind, Option, Point, ProportionOf, Scale

LAY = preset_load("protocol_003_layperson")
EXPERT = preset_load("layman_rrg_000_expert")
MATCHING = preset_load("layman_rrg_000_matching").item("sentence_match")


def test_ordinal_answers_are_coded_by_the_points_code():
    helpfulness = LAY.item("helpfulness")
    # Q4's scale runs −1..2: the code, not the position, is the analysis value.
    assert item_value_validate(helpfulness, -1) == -1
    assert item_value_code(helpfulness, -1) == -1.0
    assert item_value_validate(helpfulness, "2") == 2  # as a form posts it
    assert item_value_code(LAY.item("understanding"), 4) == 4.0
    with pytest.raises(
        InvalidAnswer, match=r"helpfulness: 3 is not a point of the scale \(\(-1, 0, 1, 2\)\)"
    ):
        item_value_validate(helpfulness, 3)
    with pytest.raises(InvalidAnswer, match="must be a whole number"):
        item_value_validate(helpfulness, "much better")
    with pytest.raises(InvalidAnswer, match="must be a whole number"):
        item_value_validate(helpfulness, True)
    for malformed in ("--1", "1.0", "½"):
        with pytest.raises(InvalidAnswer, match="must be a whole number"):
            item_value_validate(helpfulness, malformed)
    assert item_value_validate(helpfulness, " -1 ") == -1
    with pytest.raises(InvalidAnswer, match="no 'not applicable' answer"):
        item_value_validate(helpfulness, NOT_APPLICABLE)


def test_not_applicable_where_the_scale_offers_it_codes_to_no_number():
    item = Item(
        key="actionability",
        kind=ItemKind.ORDINAL,
        applies_to=AppliesTo.SIMPLIFICATION,
        roles=("radiologist",),
        wording={"en": "Actionable?"},
        scale=Scale(
            points=(Point(1, {"en": "No"}), Point(2, {"en": "Yes"})),
            not_applicable={"en": "Not applicable"},
        ),
    )
    assert item_value_validate(item, NOT_APPLICABLE) == NOT_APPLICABLE
    assert item_value_code(item, NOT_APPLICABLE) is None


def test_required_and_optional_empty_answers():
    with pytest.raises(InvalidAnswer, match="understanding: an answer is required"):
        item_value_validate(LAY.item("understanding"), "")
    assert item_value_validate(LAY.item("urgency_confidence"), None) is None
    assert item_value_code(LAY.item("urgency_confidence"), None) is None
    with pytest.raises(InvalidAnswer, match="most: an answer is required"):
        item_value_validate(LAY.item("most"), [], texts=("A", "B"))


def test_choices_among_the_texts_shown_code_to_the_set():
    most = LAY.item("most")
    value = item_value_validate(most, ["B", "A", "B"], texts=("A", "B", "C"))
    assert value == frozenset({"A", "B"})
    assert item_value_code(most, value) == frozenset({"A", "B"})
    with pytest.raises(InvalidAnswer, match="'D' not among A, B, C"):
        item_value_validate(most, ["D"], texts=("A", "B", "C"))
    with pytest.raises(InvalidAnswer, match="a list of choices"):
        item_value_validate(most, "A", texts=("A",))


def test_most_and_least_may_not_share_a_text():
    values = {"most": frozenset({"A", "B"}), "least": frozenset({"B", "C"})}
    assert exclusive_overlaps(LAY, values) == {"most": frozenset({"B"}), "least": frozenset({"B"})}
    assert exclusive_overlaps(LAY, {"most": frozenset({"A"}), "least": frozenset({"C"})}) == {}


def test_single_choice_and_pairwise_code_to_the_category():
    options = (
        Option("first", {"en": "First"}),
        Option("tie", {"en": "Tie"}),
        Option("second", {"en": "Second"}),
    )
    for kind in (ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE):
        item = Item("better", kind, AppliesTo.PAIR, ("layperson",), {"en": "Which?"}, options=options)
        assert item_value_code(item, item_value_validate(item, "tie")) == "tie"
        with pytest.raises(InvalidAnswer, match="'both' is not one of first, tie, second"):
            item_value_validate(item, "both")


def test_counts_are_non_negative_integers_under_the_maximum():
    loss = EXPERT.item("information_loss")
    assert item_value_validate(loss, 0) == 0
    assert item_value_code(loss, item_value_validate(loss, "3")) == 3.0
    with pytest.raises(InvalidAnswer, match="cannot be negative"):
        item_value_validate(loss, -1)
    with pytest.raises(InvalidAnswer, match="whole number"):
        item_value_validate(loss, 1.5)
    capped = Item("n", ItemKind.COUNT, AppliesTo.PAIR, ("r",), {"en": "n"}, max_count=5)
    with pytest.raises(InvalidAnswer, match="at most 5"):
        item_value_validate(capped, 6)


def test_free_text_is_stripped_limited_and_not_coded():
    why = LAY.item("most_justification")
    assert item_value_validate(why, "  clearer  ") == "clearer"
    assert item_value_code(why, "clearer") is None
    assert item_value_validate(why, "   ") is None  # optional, left empty
    with pytest.raises(InvalidAnswer, match="at most 2000 characters"):
        item_value_validate(why, "x" * 2001)


def algorithm_2_proportion(reference_count, generated_count, match_pairs):
    """Seed 000, appendix A.7, Algorithm 2 lines 25-35 with the annotator's judgement in place of
    GritLM similarity ≥ θ: count each generated sentence that matches some reference sentence,
    divide by the generated sentences."""
    similar_count = 0
    for c in range(generated_count):
        for r in range(reference_count):
            if (r, c) in match_pairs:
                similar_count += 1
                break
    return similar_count / generated_count


def test_sentence_matching_codes_to_the_proportion_seed_000_defines():
    # A 3-sentence reference, a 4-sentence generated report: reference sentence 0 is matched by
    # generated 0, sentence 1 by generated 0 and 2, sentence 2 by nothing.
    raw = {"generated_count": 4, "matches": [[0], [0, 2], []]}
    value = item_value_validate(MATCHING, raw)
    assert value == SentenceMatches(4, (frozenset({0}), frozenset({0, 2}), frozenset()))
    pairs = {(0, 0), (1, 0), (1, 2)}
    assert item_value_code(MATCHING, value) == algorithm_2_proportion(3, 4, pairs) == 2 / 4
    # The other denominator: reference sentences matched by some generated sentence, 2 of 3.
    recall = Item(
        "m",
        ItemKind.SENTENCE_MATCHING,
        AppliesTo.PAIR,
        ("a",),
        {"en": "m"},
        proportion_of=ProportionOf.REFERENCE,
    )
    assert item_value_code(recall, value) == pytest.approx(2 / 3)
    # Every generated sentence matched: 1; nothing matched: 0.
    assert (
        item_value_code(
            MATCHING, item_value_validate(MATCHING, {"generated_count": 2, "matches": [[1], [0]]})
        )
        == 1.0
    )
    assert (
        item_value_code(MATCHING, item_value_validate(MATCHING, {"generated_count": 2, "matches": [[]]}))
        == 0.0
    )
    # An empty generated report has no proportion (not 0: nothing was generated to match).
    assert (
        item_value_code(MATCHING, item_value_validate(MATCHING, {"generated_count": 0, "matches": [[]]}))
        is None
    )


def test_sentence_matching_answers_are_checked():
    with pytest.raises(InvalidAnswer, match=r"matches\[1\]: \[4\] not among the 4 generated sentences"):
        item_value_validate(MATCHING, {"generated_count": 4, "matches": [[0], [4]]})
    with pytest.raises(InvalidAnswer, match="no sentence to match"):
        item_value_validate(MATCHING, {"generated_count": 4, "matches": []})
    with pytest.raises(InvalidAnswer, match="generated_count, matches"):
        item_value_validate(MATCHING, {"matches": [[0]]})
    with pytest.raises(InvalidAnswer, match=r"matches\[0\] is a list"):
        item_value_validate(MATCHING, {"generated_count": 1, "matches": ["0"]})


def test_error_spans_are_checked_and_coded_by_how_many():
    item = Item(
        "errors",
        ItemKind.ERROR_SPANS,
        AppliesTo.SIMPLIFICATION,
        ("radiologist",),
        {"en": "Mark errors"},
        options=(Option("omission", {"en": "Omission"}),),
        severities=(Option("minor", {"en": "Minor"}), Option("could_harm", {"en": "Could harm"})),
    )

    def span(start, end, category="omission", severity="minor"):
        return {"start": start, "end": end, "category": category, "severity": severity}

    value = item_value_validate(
        item, [span(10, 14, severity="could_harm"), span(0, 3), span(0, 3)], text_length=14
    )
    assert value == (ErrorSpan(0, 3, "omission", "minor"), ErrorSpan(10, 14, "omission", "could_harm"))
    assert item_value_code(item, value) == 2.0
    with pytest.raises(InvalidAnswer, match="0 <= start < end"):
        item_value_validate(item, [span(3, 3)])
    with pytest.raises(InvalidAnswer, match="'typo' is not one of"):
        item_value_validate(item, [span(0, 3, category="typo")])
    with pytest.raises(InvalidAnswer, match=r"spans\[0\].severity 'fatal' is not one of"):
        item_value_validate(item, [span(0, 3, severity="fatal")])
    with pytest.raises(InvalidAnswer, match="after the text's 12 characters"):
        item_value_validate(item, [span(10, 14)], text_length=12)
    with pytest.raises(InvalidAnswer, match=r"spans\[0\] is \{start, end, category, severity\}"):
        item_value_validate(item, [{"start": 0, "end": 3, "label": "omission"}])


def test_a_value_of_the_wrong_kind_is_not_coded():
    with pytest.raises(InvalidAnswer, match="not a stored ordinal value"):
        item_value_code(LAY.item("understanding"), frozenset({"A"}))
