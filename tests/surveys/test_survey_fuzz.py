"""Property-based fuzz of every survey endpoint (hypothesis): whatever a participant's browser
sends — known field names with arbitrary text (NUL bytes, control characters, huge values, other
scripts), unknown fields, repeated fields, with or without htmx — the answer is never a server
error, and nothing stored breaks the scales' rules (the database constraints would raise)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import participant_services, scales
from annotation.models import ExpertItem, LayItem, Participant
from tests.annotation import answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db(transaction=False)

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
NASTY = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "\x00", "a\x00b", "-1", "0", "6", "99999999999999999999", "NaN", "1e309", "3.5"]),
    st.sampled_from([level.name for scale in scales.LAY_SCALES.values() for level in scale.levels]),
    st.just("x" * 70_000),
)
LAY_FIELDS = [
    "understanding",
    "confidence",
    "urgency_confidence",
    "severity_guess",
    "helpfulness",
    "most",
    "least",
    "most_justification",
    "least_justification",
    "rendered_at",
    "autosave",
    "fields",
    "submit",
    "consent",
    "answer",
]


def payloads(fields: list[str]):
    keys = st.one_of(st.sampled_from(fields), st.text(min_size=1, max_size=12))
    return st.dictionaries(keys, st.one_of(NASTY, st.lists(NASTY, max_size=3)), max_size=8)


def _ok(response) -> None:
    assert response.status_code < 500, response.content[:300]


@pytest.fixture
def lay_setup(db):
    study = build_study(n_sources=3)
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=participant, accepted=True)
    client = Client()
    client.post(reverse("surveys:lay-instructions", kwargs={"token": participant.token}))
    items = list(LayItem.objects.filter(participant=participant).order_by("position"))
    assert items
    return client, participant, items


@FUZZ
@given(
    data=payloads(LAY_FIELDS),
    panel=st.sampled_from(["original", "assisted", "preference", "nope"]),
    htmx=st.booleans(),
)
def test_lay_panels_never_fail_whatever_is_posted(lay_setup, data, panel, htmx):
    client, participant, items = lay_setup
    url = reverse(
        "surveys:lay-panel", kwargs={"token": participant.token, "item_id": items[0].pk, "panel": panel}
    )
    _ok(client.post(url, data, **({"HTTP_HX_REQUEST": "true"} if htmx else {})))
    _ok(client.get(url))
    for answer in answers.lay_answers(participant=participant):
        for question, scale in scales.LAY_SCALES.items():
            value = getattr(answer, question)
            assert value == "" or value in scale.names


@FUZZ
@given(
    data=payloads(LAY_FIELDS),
    step=st.sampled_from(["lay-consent", "lay-background", "lay-instructions", "lay-done"]),
)
def test_lay_entry_pages_never_fail_whatever_is_posted(lay_setup, data, step):
    client, participant, _ = lay_setup
    _ok(client.post(reverse(f"surveys:{step}", kwargs={"token": participant.token}), data))


@pytest.mark.heavy
@FUZZ
@given(data=payloads(["PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "consent"]))
def test_open_recruitment_never_fails(db, data):
    study = build_study(slug="open-fuzz", n_sources=2)
    client = Client()
    url = reverse("surveys:lay-join", kwargs={"slug": study.slug})
    _ok(client.get(url, {k: v for k, v in data.items() if isinstance(v, str)}))
    _ok(client.post(url, data))


@pytest.fixture
def expert_setup(db):
    study = build_study(n_sources=2)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    client = Client()
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    items = list(ExpertItem.objects.filter(participant=participant).order_by("position"))
    assert items
    return client, participant, items


EXPERT_FIELDS = [
    f"{label}-{aspect}" for label in "ABCD" for aspect in (*scales.EXPERT_ASPECTS, "comment")
] + ["original-severity", "original-simplicity", "original-comment", "elapsed_ms", "fields", "next", "finish"]


@pytest.mark.heavy
@FUZZ
@given(data=payloads(EXPERT_FIELDS), htmx=st.booleans())
def test_radiologist_page_never_fails_whatever_is_posted(expert_setup, data, htmx):
    client, participant, items = expert_setup
    url = reverse("surveys:expert-page", args=[participant.token, items[0].pk])
    _ok(client.post(url, data, **({"HTTP_HX_REQUEST": "true"} if htmx else {})))
    _ok(client.get(url))
    for rating in answers.ratings(participant=participant):
        for aspect in scales.EXPERT_ASPECTS:
            assert getattr(rating, aspect) in (None, 1, 2, 3, 4, 5)
        assert "\x00" not in (rating.comment or "")


@FUZZ
@given(token=st.one_of(st.text(min_size=1, max_size=80), st.sampled_from(["\x00", "a\x00b", "x" * 65])))
def test_any_token_in_a_survey_link_is_a_clear_refusal_never_an_error(expert_setup, token):
    client, participant, items = expert_setup
    token = token.replace("/", "_")  # a path segment
    for name, kwargs in [
        ("surveys:entry", {"token": token}),
        ("surveys:expert-page", {"token": token, "item_id": items[0].pk}),
        ("surveys:lay-start", {"token": token}),
    ]:
        url = reverse(name, kwargs=kwargs)
        for response in (client.get(url), client.post(url, {"A-correctness": "3"}, HTTP_HX_REQUEST="true")):
            assert response.status_code in (403, 404, 405), (url, response.status_code)
