"""The qualification round in the pairwise flow: a team adds a practice comparison to its pairwise
instrument, and a rater practises it (A, B, tie accepted per the tolerance) between consent and the
first comparison."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import participant_services
from annotation import qualification_states as states
from annotation.instrument_services import study_instrument_save
from annotation.models import Participant
from instruments.validation import instrument_from_data, instrument_to_data
from qualification.models import PracticeAnswer
from qualification.rule_services import qualification_rule_save
from surveys.compare_two.services import pairwise_instrument_attach
from tests.annotation.factories import build_study

PRACTICE = {
    "key": "practice_laterality",
    "item": "preference",
    "source": {"en": "Left lower lobe pneumonia.", "es": "Neumonía del lóbulo inferior izquierdo."},
    "text": {
        "en": "You have a lung infection on the right.",
        "es": "Tiene una infección en el pulmón derecho.",
    },
    "other": {
        "en": "You have a lung infection low in the left lung.",
        "es": "Tiene una infección en la parte baja del pulmón izquierdo.",
    },
    "gold": "right",
    "also_accept": [],
    "explanation": {
        "en": "A names the wrong side; B is right.",
        "es": "A indica el lado equivocado; B es correcta.",
    },
}


@pytest.fixture
def study(db):
    study = build_study(slug="pwqual", n_sources=3, systems=("a", "b", "c"))
    row = pairwise_instrument_attach(study=study)
    data = instrument_to_data(instrument_from_data(row.definition))
    data["practice"] = [PRACTICE]
    study_instrument_save(study=study, instrument=instrument_from_data(data), actor=None, note="practice")
    study.refresh_from_db()
    return study


def test_a_pairwise_rater_practises_between_consent_and_the_first_comparison(client, study):
    qualification_rule_save(study=study, flow="pairwise", group="layperson", share_percent=100, retries=2)
    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    practice = reverse("qualification:practice", args=[person.token, "pairwise"])
    assert client.post(reverse("surveys:pairwise-consent", args=[person.token]))["Location"] == practice
    assert client.get(reverse("surveys:pairwise-start", args=[person.token]))["Location"] == practice
    client.post(practice, {"action": "start"})
    page = client.get(practice).content.decode()
    assert "You have a lung infection on the right." in page and "A is better" in page
    response = client.post(practice, {"action": "answer", "key": "practice_laterality", "answer": "left"})
    feedback = client.get(response["Location"]).content.decode()
    assert "Not within the expected answer" in feedback and "A names the wrong side" in feedback
    assert "B is better" in feedback  # the expected answer, in the option's words
    client.post(practice, {"action": "start"})
    client.post(practice, {"action": "answer", "key": "practice_laterality", "answer": "right"})
    person.refresh_from_db()
    assert person.qualification == states.PASSED
    assert "/compare/" in client.get(reverse("surveys:pairwise-start", args=[person.token]))["Location"]
    assert list(PracticeAnswer.objects.order_by("attempt__number").values_list("correct", flat=True)) == [
        False,
        True,
    ]


def test_a_group_the_pairwise_item_does_not_ask_has_no_round(study):
    with pytest.raises(Exception, match="no practice items for this rater group"):
        qualification_rule_save(study=study, flow="pairwise", group="nurse", share_percent=50)
