"""The judge answer format: strict parsing against the schema, and the K-sample summary."""

from __future__ import annotations

import json

import pytest

from judging.instrument import AnswerError, aggregate_samples, answer_schema, parse_answer

GOOD_TEXT = {"correctness": 5, "completeness": 4, "hallucination": 5, "structure": 3, "simplicity": 2}


def test_a_valid_answer_parses_with_or_without_justification_and_fence():
    assert parse_answer("radiologist_text", json.dumps(GOOD_TEXT)) == GOOD_TEXT
    with_reason = {**GOOD_TEXT, "justification": "fine"}
    assert parse_answer("radiologist_text", json.dumps(with_reason)) == with_reason
    fenced = "```json\n" + json.dumps(GOOD_TEXT) + "\n```"
    assert parse_answer("radiologist_text", fenced) == GOOD_TEXT


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Correctness: 5, completeness: 4", "malformed"),
        ("Here is my rating: " + json.dumps(GOOD_TEXT), "malformed"),
        ("[5, 4, 5, 3, 2]", "malformed"),
        (json.dumps({**GOOD_TEXT, "simplicity": 6}), "out_of_range"),
        (json.dumps({**GOOD_TEXT, "correctness": 0}), "out_of_range"),
        (json.dumps({**GOOD_TEXT, "structure": "4"}), "schema"),
        (json.dumps({k: v for k, v in GOOD_TEXT.items() if k != "structure"}), "schema"),
        (json.dumps({**GOOD_TEXT, "overall": 4}), "schema"),
        ("I'm sorry, but I can't provide medical assessments.", "refusal"),
    ],
)
def test_unusable_answers_are_rejected_with_their_kind(text, kind):
    with pytest.raises(AnswerError) as caught:
        parse_answer("radiologist_text", text)
    assert caught.value.kind == kind


def test_categorical_answers_must_use_the_survey_wording():
    good = {"understanding": "Most of it", "confidence": "With low confidence", "severity_guess": "Mild"}
    assert parse_answer("lay_original", json.dumps(good)) == good
    with pytest.raises(AnswerError) as caught:
        parse_answer("lay_original", json.dumps({**good, "severity_guess": "mild"}))
    assert caught.value.kind == "out_of_range"
    with pytest.raises(AnswerError):
        parse_answer("lay_original", json.dumps({**good, "helpfulness": "It did not help"}))
    schema = answer_schema("lay_assisted")
    assert schema["properties"]["helpfulness"]["enum"] == [
        "It further confused me",
        "It did not help",
        "I understand slightly better",
        "I understand much better",
    ]


def test_samples_are_summarised_by_their_median_with_the_spread():
    samples = [
        {"severity": "Critical", "original_simplicity": 2},
        {"severity": "Moderate", "original_simplicity": 5},
        {"severity": "Mild", "original_simplicity": 2},
    ]
    medians, spread = aggregate_samples("radiologist_source", samples)
    # Critical = 1, Moderate = 3, Mild = 4 → median 3; simplicity 2, 5, 2 → 2.
    assert medians == {"severity": 3.0, "original_simplicity": 2.0}
    assert spread["severity"]["values"] == [1, 3, 4]
    assert spread["severity"]["min"] == 1 and spread["severity"]["max"] == 4
    assert spread["original_simplicity"]["sd"] == pytest.approx((2 * 1**2 + 2**2) ** 0.5 / 3**0.5)
    even, _ = aggregate_samples("radiologist_text", [GOOD_TEXT, {**GOOD_TEXT, "simplicity": 5}])
    assert even["simplicity"] == 3.5
