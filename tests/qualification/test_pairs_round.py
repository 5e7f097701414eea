"""The qualification round in the rate-each-pair flow: a team adds practice pairs to its pairs
instrument, and a rater practises them between consent and the first pair (fail, explanation,
retry, pass, first page), or is screened out with the recruiter's return link."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation import participant_services
from annotation import qualification_states as states
from annotation.instrument_services import study_instrument_save
from annotation.models import ItemAnswer, Participant, Study, StudyInstrument, StudyMembership
from instruments.presets import preset_load
from instruments.validation import instrument_from_data, instrument_to_data
from qualification.models import QualificationAttempt, QualificationRule
from qualification.rule_services import qualification_rule_save
from qualification.selectors import practice_round, round_settings
from surveys.rate_each_pair import selectors as design
from surveys.rate_each_pair.services import study_instrument_attach
from tests.annotation.factories import build_study
from tests.qualification.test_lay_round import PRACTICE as LAY_PRACTICE

pytestmark = pytest.mark.django_db

PRACTICE = [
    {
        "key": "practice_side",
        "item": "factual_correctness",
        "source": {"en": "Left lower lobe pneumonia."},
        "text": {"en": "Left lower lobe pneumonia."},
        "other": {"en": "You have a lung infection low in the right lung."},
        "gold": 1,
        "within": 1,
        "explanation": {"en": "The lay caption names the wrong side: a factual error."},
    },
    {
        "key": "practice_plain",
        "item": "simplicity",
        "source": {"en": "No acute cardiopulmonary process."},
        "text": {"en": "No acute cardiopulmonary process."},
        "other": {"en": "Your heart and lungs look fine."},
        "gold": 5,
        "within": 1,
        "explanation": {"en": "Everyday words only: it is simple."},
    },
]


@pytest.fixture
def study() -> Study:
    study = build_study(slug="pairsqual", n_sources=3, systems=("a", "b"))
    row = study_instrument_attach(study=study, preset_name="medlaybench_002", actor="test")
    data = instrument_to_data(instrument_from_data(row.definition))
    data["practice"] = PRACTICE
    study_instrument_save(study=study, instrument=instrument_from_data(data), actor=None, note="practice")
    study.refresh_from_db()
    return study


def practice_url(participant) -> str:
    return reverse("qualification:practice", args=[participant.token, "pairs"])


def consent(client: Client, participant) -> str:
    url = reverse("surveys:pairs-consent", args=[participant.token])
    return client.post(url, {"choice": "accept"})["Location"]


def answer_all(client: Client, participant, *, right: int) -> None:
    client.post(practice_url(participant), {"action": "start"})
    for i, entry in enumerate(PRACTICE):
        page = client.get(practice_url(participant)).content.decode()
        assert f'data-practice-key="{entry["key"]}"' in page and entry["other"]["en"] in page
        value = entry["gold"] if i < right else (5 if entry["gold"] <= 2 else 1)
        response = client.post(
            practice_url(participant), {"action": "answer", "key": entry["key"], "answer": str(value)}
        )
        assert response.status_code == 302, response.content.decode()[:500]
        feedback = client.get(response["Location"]).content.decode()
        assert entry["explanation"]["en"].split(":")[0] in feedback
        assert ("Within the expected answer" if i < right else "Not within the expected answer") in feedback


def test_a_rater_fails_retries_passes_and_reaches_the_first_pair(client, study):
    qualification_rule_save(study=study, flow="pairs", group="layperson", share_percent=100, retries=1)
    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    assert consent(client, person) == practice_url(person)
    first = design.participant_pairs(participant=person)[0]
    page_url = reverse("surveys:pairs-page", args=[person.token, first.shown_text_id])
    # Every real page sends a rater due to practise to the round; a posted page stores nothing.
    assert client.get(reverse("surveys:pairs-start", args=[person.token]))["Location"] == practice_url(person)
    assert client.get(page_url)["Location"] == practice_url(person)
    assert client.post(page_url, {"medlaybench_002.fluency": "3"})["Location"] == practice_url(person)
    assert client.get(reverse("surveys:pairs-done", args=[person.token]))["Location"] == practice_url(person)
    assert not ItemAnswer.objects.filter(participant=person).exists()

    answer_all(client, person, right=1)
    outcome = client.get(practice_url(person)).content.decode()
    assert "1 of 2 answers were within the expected answer (2 needed)" in outcome and "Try again" in outcome
    answer_all(client, person, right=2)
    assert "You passed the practice round" in client.get(practice_url(person)).content.decode()
    person.refresh_from_db()
    assert person.qualification == states.PASSED
    assert client.get(reverse("surveys:pairs-start", args=[person.token]))["Location"] == page_url
    assert client.get(page_url).status_code == 200
    attempts = QualificationAttempt.objects.filter(participant=person).order_by("number")
    current = StudyInstrument.objects.get(study=study, flow="pairs", is_current=True)
    assert [(a.flow, a.correct, a.passed, a.instrument_id) for a in attempts] == [
        ("pairs", 1, False, current.pk),
        ("pairs", 2, True, current.pk),
    ]


def test_the_last_failed_attempt_screens_a_rater_out_with_the_return_link(client, study):
    study.screened_out_redirect_url = "https://app.prolific.com/submissions/complete?cc=PAIRSOUT"
    study.save()
    qualification_rule_save(
        study=study, flow="pairs", group="radiologist", share_percent=100, on_fail="screen_out"
    )
    person = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    consent(client, person)
    answer_all(client, person, right=0)
    page = client.get(practice_url(person)).content.decode()
    assert "cc=PAIRSOUT" in page and "Try again" not in page
    person.refresh_from_db()
    assert person.qualification == states.FAILED and person.screened_out_at is not None
    assert client.get(reverse("surveys:pairs-start", args=[person.token]))["Location"] == practice_url(person)
    assert client.post(practice_url(person), {"action": "start"}).status_code == 409


def test_without_a_rule_consent_leads_to_the_first_pair(client, study):
    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    first = design.participant_pairs(participant=person)[0]
    assert consent(client, person) == reverse("surveys:pairs-page", args=[person.token, first.shown_text_id])


def test_the_console_offers_each_group_the_pairs_items_ask(study):
    offered = {(s.flow, s.group, s.items) for s in round_settings(study=study)}
    assert {("pairs", "layperson", 2), ("pairs", "radiologist", 2)} <= offered
    assert not len(practice_round(study=study, flow="pairs", group="nurse"))
    with pytest.raises(Exception, match="no practice items for this rater group"):
        qualification_rule_save(study=study, flow="pairs", group="nurse", share_percent=50)


def test_the_console_page_sets_a_lay_and_a_pairs_rule(client, study, django_user_model):
    lay = instrument_to_data(preset_load("protocol_003_layperson"))
    lay["practice"] = LAY_PRACTICE
    study_instrument_save(study=study, instrument=instrument_from_data(lay), actor=None, note="p", flow="lay")
    user = django_user_model.objects.create_user("editor", password="pw-editor-123")
    StudyMembership.objects.create(study=study, user=user, role=StudyMembership.Role.EDITOR)
    client.force_login(user)
    url = reverse("console:qualification", args=[study.slug])
    page = client.get(url).content.decode()
    assert "layperson · lay flow" in page and "layperson · pairs flow" in page
    for target in ("lay:layperson", "pairs:radiologist"):
        prefix = target.replace(":", "-")
        fields = {"target": target, "share_percent": 50, "retries": 0, "min_seconds": 0, "on_fail": "flag"}
        form = {"prefix": prefix, "action": "save", **{f"{prefix}-{k}": v for k, v in fields.items()}}
        assert client.post(url, form).status_code == 302
    assert sorted(QualificationRule.objects.values_list("flow", "rater_group", "on_fail")) == [
        ("lay", "layperson", "flag"),
        ("pairs", "radiologist", "flag"),
    ]
