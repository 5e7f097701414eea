"""A radiologist's qualification round in the survey: sent from consent to the practice items, shown
after each answer whether it was within tolerance and why, retrying per the rule, then the real
study; or screened out with the recruiter's return link, or on, flagged. A participant who has
qualified costs the real pages no extra query."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation import participant_services
from annotation import qualification_states as states
from annotation.models import ActivityEvent, Participant
from instruments.presets import preset_load
from qualification.models import PracticeAnswer, QualificationAttempt, QualificationRule
from qualification.rule_services import qualification_rule_save
from tests.annotation.factories import build_study
from tests.surveys.test_radiologist_scale import PAGE_GET_QUERIES

PRACTICE = preset_load("protocol_003_radiologist").practice


def practice_url(participant) -> str:
    return reverse("qualification:practice", args=[participant.token, "expert"])


def consent(client: Client, participant) -> str:
    client.get(reverse("surveys:entry", args=[participant.token]))
    response = client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    return response["Location"]


def answer_all(client: Client, participant, *, right: int) -> list[str]:
    """Answer the round, the first `right` items with their gold and the rest far off; the
    explanations shown, in order."""
    client.post(practice_url(participant), {"action": "start"})
    shown = []
    for i, entry in enumerate(PRACTICE):
        page = client.get(practice_url(participant)).content.decode()
        assert f'data-practice-key="{entry.key}"' in page
        value = entry.gold if i < right else (1 if entry.gold >= 4 else 5)
        response = client.post(
            practice_url(participant), {"action": "answer", "key": entry.key, "answer": str(value)}
        )
        assert response.status_code == 302, response.content.decode()[:500]
        feedback = client.get(response["Location"]).content.decode()
        assert entry.explanation["en"].split(".")[0].replace('"', "&quot;") in feedback
        assert ("Within the expected answer" if i < right else "Not within the expected answer") in feedback
        shown.append(feedback)
    return shown


@pytest.fixture
def study():
    return build_study(slug="qual", n_sources=3, systems=("a", "b"))


@pytest.mark.django_db
def test_a_radiologist_fails_retries_passes_and_reaches_the_first_page(
    client, study, django_assert_max_num_queries
):
    qualification_rule_save(
        study=study, flow="expert", group="radiologist", share_percent=80, retries=1, on_fail="screen_out"
    )
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    assert consent(client, participant) == practice_url(participant)
    # A real page sends a participant due to practise back to the round.
    first = participant.expert_items.order_by("position").first()
    page_url = reverse("surveys:expert-page", args=[participant.token, first.pk])
    assert client.get(page_url)["Location"] == practice_url(participant)

    answer_all(client, participant, right=2)
    outcome = client.get(practice_url(participant)).content.decode()
    assert "2 of 5 answers were within the expected answer (4 needed)" in outcome
    assert "Try again" in outcome
    participant.refresh_from_db()
    assert participant.qualification == states.DUE

    answer_all(client, participant, right=5)
    outcome = client.get(practice_url(participant)).content.decode()
    assert "You passed the practice round" in outcome
    participant.refresh_from_db()
    assert participant.qualification == states.PASSED
    assert client.get(reverse("surveys:expert-start", args=[participant.token]))["Location"].startswith(
        page_url
    )
    # Qualified: the real page costs what it cost before the round existed.
    with django_assert_max_num_queries(PAGE_GET_QUERIES):
        assert client.get(page_url).status_code == 200
    attempts = list(QualificationAttempt.objects.filter(participant=participant).order_by("number"))
    assert [(a.correct, a.total, a.passed) for a in attempts] == [(2, 5, False), (5, 5, True)]
    assert PracticeAnswer.objects.filter(attempt__participant=participant).count() == 10
    verbs = list(
        ActivityEvent.objects.filter(study=study, verb__startswith="qualification.").values_list(
            "verb", flat=True
        )
    )
    assert set(verbs) == {"qualification.rule_set", "qualification.failed_attempt", "qualification.passed"}


@pytest.mark.django_db
def test_the_last_failed_attempt_screens_out_with_the_return_link(client, study):
    study.screened_out_redirect_url = "https://app.prolific.com/submissions/complete?cc=SCREEN1"
    study.save()
    qualification_rule_save(
        study=study, flow="expert", group="radiologist", share_percent=100, on_fail="screen_out"
    )
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    consent(client, participant)
    answer_all(client, participant, right=4)
    page = client.get(practice_url(participant)).content.decode()
    assert "cc=SCREEN1" in page and "Try again" not in page
    participant.refresh_from_db()
    assert participant.qualification == states.FAILED and participant.screened_out_at is not None
    # No real page, no further attempt.
    assert client.get(reverse("surveys:expert-start", args=[participant.token]))["Location"] == practice_url(
        participant
    )
    assert client.post(practice_url(participant), {"action": "start"}).status_code == 409


@pytest.mark.django_db
def test_a_flagged_rater_goes_on_to_the_study(client, study):
    qualification_rule_save(
        study=study, flow="expert", group="radiologist", share_percent=100, on_fail="flag"
    )
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    consent(client, participant)
    answer_all(client, participant, right=0)
    page = client.get(practice_url(participant)).content.decode()
    assert "Continue to the study" in page
    participant.refresh_from_db()
    assert participant.qualification == states.FLAGGED
    assert "/page/" in client.get(reverse("surveys:expert-start", args=[participant.token]))["Location"]


@pytest.mark.django_db
def test_without_a_rule_consent_leads_straight_to_the_first_page(client, study):
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    assert "/page/" in consent(client, participant)
    assert client.get(practice_url(participant))["Location"].endswith(f"/r/{participant.token}/")
    assert not QualificationRule.objects.exists()


@pytest.mark.django_db
def test_a_bad_practice_answer_is_refused_on_the_field_and_nothing_is_stored(client, study):
    qualification_rule_save(study=study, flow="expert", group="radiologist", share_percent=60)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    consent(client, participant)
    client.post(practice_url(participant), {"action": "start"})
    response = client.post(
        practice_url(participant), {"action": "answer", "key": PRACTICE[0].key, "answer": "9"}
    )
    assert response.status_code == 400
    assert "9 is not a point of the scale" in response.content.decode()
    assert not PracticeAnswer.objects.exists()


@pytest.mark.django_db
def test_a_round_no_longer_asked_lets_those_still_due_go_on(client, study):
    from qualification.rule_services import qualification_rule_remove

    qualification_rule_save(study=study, flow="expert", group="radiologist", share_percent=100)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    consent(client, participant)
    answer_all(client, participant, right=1)
    assert qualification_rule_remove(study=study, flow="expert", group="radiologist", actor="test")
    participant.refresh_from_db()
    assert participant.qualification == states.NONE
    assert "/page/" in client.get(reverse("surveys:expert-start", args=[participant.token]))["Location"]
    assert QualificationAttempt.objects.filter(participant=participant).count() == 1
