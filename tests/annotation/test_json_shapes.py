"""Study settings kept as JSON are refused with a clear message when their shape is wrong, in the
model's clean() and so in the admin; good shapes pass."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation.json_shapes import attention_check_errors, background_questions_errors
from annotation.models import AttentionCheck, Study
from tests.annotation.factories import build_study

GOOD = [
    {"key": "age", "question": "How old are you?", "options": ["18-39", "40-64", "65+"]},
    {"key": "postcode", "question": "Your postcode?"},
]


def test_good_background_questions_pass():
    assert background_questions_errors(GOOD) == []
    assert background_questions_errors([]) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([{"key": "q", "question": "Yes?", "options": "Yes,No"}], "not the text 'Yes,No'"),
        ({"key": "q"}, "must be a list"),
        (["How old are you?"], "must be an object"),
        ([{"question": "Age?"}], '"key" is missing'),
        ([{"key": "", "question": "Age?"}], '"key" is missing'),
        ([{"key": "a b", "question": "Age?"}], "only letters, digits and _"),
        ([{"key": "age", "question": "  "}], '"question" is missing or empty'),
        ([{"key": "age", "question": "A?"}, {"key": "age", "question": "B?"}], "used by an earlier question"),
        ([{"key": "age", "question": "A?", "options": ["x", ""]}], "option 2 is empty"),
        ([{"key": "age", "question": "A?", "options": ["x", "X"]}], "listed twice"),
        ([{"key": "age", "question": "A?", "options": ["x", {"y": 1}]}], "option 2 must be a text"),
        ([{"key": "age", "question": "A?", "options": ["only"]}], "a single option"),
        ([{"key": "age", "question": "A?", "option": ["a", "b"]}], "unknown field(s) 'option'"),
        ([{"key": "age", "question": "A?", "options": 3}], "not int"),
    ],
)
def test_bad_background_questions_are_named(value, expected):
    errors = background_questions_errors(value)
    assert errors and any(expected in message for message in errors), errors


def test_messages_name_the_question():
    errors = background_questions_errors([GOOD[0], {"key": "sex", "question": "Sex?", "options": "F,M"}])
    assert errors == [
        'Background question 2 (\'sex\'): "options" must be a list of answers such as ["Yes", "No"], '
        "not the text 'F,M'."
    ]


@pytest.mark.parametrize(
    ("options", "expected_answer", "expected"),
    [
        ("blue,red", "blue", "not the text"),
        (["blue", "red"], "green", "not one of the options"),
        (["blue", "red"], "", 'expected answer" is empty'),
    ],
)
def test_bad_attention_checks_are_named(options, expected_answer, expected):
    errors = attention_check_errors(prompt="Pick blue", options=options, expected_answer=expected_answer)
    assert any(expected in message for message in errors), errors


def test_attention_check_answer_matches_like_the_survey_does():
    # The survey ignores case and spacing when it compares the answer with the expected one.
    assert (
        attention_check_errors(prompt="Pick", options=["Light  Blue", "Red"], expected_answer="light blue")
        == []
    )
    assert attention_check_errors(prompt="Pick", options=[], expected_answer="anything") == []


@pytest.mark.django_db
def test_model_clean_refuses_the_string_options():
    study = Study(
        slug="bad", title="Bad", background_questions=[{"key": "q", "question": "Q?", "options": "Yes,No"}]
    )
    with pytest.raises(ValidationError) as excinfo:
        study.full_clean()
    assert "background_questions" in excinfo.value.message_dict
    check = AttentionCheck(
        study=build_study(slug="c", n_sources=1), position=0, prompt="P", options="a,b", expected_answer="a"
    )
    with pytest.raises(ValidationError):
        check.full_clean()


@pytest.mark.django_db
def test_the_admin_shows_the_message_and_saves_nothing(client):
    study = build_study(slug="adm-json", n_sources=1)
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    data = {
        "slug": study.slug,
        "title": study.title,
        "status": study.status,
        "unit": study.unit,
        "background_questions": json.dumps([{"key": "q", "question": "Yes or no?", "options": "Yes,No"}]),
        "abandon_after_minutes": 120,
        "safety_gate_threshold": 2,
        "systems-TOTAL_FORMS": 0,
        "systems-INITIAL_FORMS": 0,
        "attention_checks-TOTAL_FORMS": 0,
        "attention_checks-INITIAL_FORMS": 0,
    }
    response = client.post(reverse("admin:annotation_study_change", args=[study.pk]), data)
    assert response.status_code == 200
    assert "must be a list of answers such as" in response.content.decode()
    study.refresh_from_db()
    assert study.background_questions == []
