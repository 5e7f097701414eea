"""The qualification round in the lay three-panel flow: a team adds practice items to its lay
instrument, and a layperson practises them between the instructions and the first panel (fail,
explanation, retry, pass, first panel), or is screened out with the recruiter's return link. A
participant who has qualified costs the panels no extra query."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation import participant_services
from annotation import qualification_states as states
from annotation.instrument_services import study_instrument_save
from annotation.models import ItemAnswer, LayItem, Participant, Study
from instruments.presets import preset_load
from instruments.validation import instrument_from_data, instrument_to_data
from qualification.models import PracticeAnswer, QualificationAttempt
from qualification.rule_services import qualification_rule_save
from qualification.selectors import round_settings
from surveys.lay import steps
from tests.annotation.factories import build_study
from tests.surveys.test_lay_queries import MAX_QUERIES

pytestmark = pytest.mark.django_db

PRACTICE = [
    {
        "key": "practice_understanding",
        "item": "understanding",
        "source": {"en": "The heart is normal in size.", "es": "El corazón tiene un tamaño normal."},
        "gold": 4,
        "within": 1,
        "explanation": {
            "en": "Plain words: most readers understand all of it.",
            "es": "Palabras sencillas: casi todos lo entienden.",
        },
    },
    {
        "key": "practice_severity",
        "item": "severity_guess",
        "source": {"en": "Large tension pneumothorax.", "es": "Neumotórax a tensión grande."},
        "gold": 1,
        "within": 1,
        "explanation": {
            "en": "A tension pneumothorax is an emergency.",
            "es": "Un neumotórax a tensión es una urgencia.",
        },
    },
]


@pytest.fixture
def study() -> Study:
    study = build_study(slug="layqual", n_sources=3, systems=("a", "b"))
    data = instrument_to_data(preset_load("protocol_003_layperson"))
    data["practice"] = PRACTICE
    study_instrument_save(
        study=study, instrument=instrument_from_data(data), actor=None, note="practice", flow="lay"
    )
    study.refresh_from_db()
    return study


def practice_url(participant) -> str:
    return reverse("qualification:practice", args=[participant.token, "lay"])


def lay_url(name: str, participant) -> str:
    return reverse(f"surveys:{name}", args=[participant.token])


def begin(client: Client, study: Study) -> tuple[Participant, str]:
    """A layperson who consents and starts: where the instructions' Start button sends them."""
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    assert client.post(lay_url("lay-consent", participant), {"choice": "accept"}).status_code == 302
    return participant, client.post(lay_url("lay-instructions", participant))["Location"]


def answer_all(client: Client, participant, *, right: int) -> list[str]:
    client.post(practice_url(participant), {"action": "start"})
    shown = []
    for i, entry in enumerate(PRACTICE):
        page = client.get(practice_url(participant)).content.decode()
        assert f'data-practice-key="{entry["key"]}"' in page and entry["source"]["en"] in page
        value = entry["gold"] if i < right else (1 if entry["gold"] >= 3 else 4)
        response = client.post(
            practice_url(participant), {"action": "answer", "key": entry["key"], "answer": str(value)}
        )
        assert response.status_code == 302, response.content.decode()[:500]
        feedback = client.get(response["Location"]).content.decode()
        assert entry["explanation"]["en"].split(":")[0] in feedback
        assert ("Within the expected answer" if i < right else "Not within the expected answer") in feedback
        shown.append(feedback)
    return shown


def test_a_layperson_fails_retries_passes_and_reaches_the_first_panel(
    client, django_assert_max_num_queries, study
):
    qualification_rule_save(study=study, flow="lay", group="layperson", share_percent=100, retries=1)
    participant, after_start = begin(client, study)
    assert after_start == practice_url(participant)
    # Every lay page sends a participant due to practise to the round: start, instructions, panel.
    first = LayItem.objects.filter(participant=participant).order_by("position").first()
    panel_url = reverse("surveys:lay-panel", args=[participant.token, first.pk, "original"])
    assert client.get(lay_url("lay-start", participant))["Location"] == practice_url(participant)
    assert client.get(panel_url)["Location"] == lay_url("lay-start", participant)
    assert client.post(panel_url, {"understanding": "Most of it"}).status_code == 302
    assert not ItemAnswer.objects.filter(participant=participant).exists()

    feedback = answer_all(client, participant, right=1)
    assert "Most readers understand" not in feedback[0]  # each item's own explanation
    outcome = client.get(practice_url(participant)).content.decode()
    assert "1 of 2 answers were within the expected answer (2 needed)" in outcome and "Try again" in outcome
    participant.refresh_from_db()
    assert participant.qualification == states.DUE

    answer_all(client, participant, right=2)
    assert "You passed the practice round" in client.get(practice_url(participant)).content.decode()
    participant.refresh_from_db()
    assert participant.qualification == states.PASSED
    assert client.get(lay_url("lay-start", participant))["Location"] == panel_url
    assert client.get(panel_url).status_code == 200
    # Qualified: the panel costs what it cost before the round existed.
    with django_assert_max_num_queries(MAX_QUERIES["get original"]):
        assert client.get(panel_url).status_code == 200
    attempts = QualificationAttempt.objects.filter(participant=participant).order_by("number")
    assert [(a.flow, a.correct, a.total, a.passed) for a in attempts] == [
        ("lay", 1, 2, False),
        ("lay", 2, 2, True),
    ]
    assert PracticeAnswer.objects.filter(attempt__participant=participant).count() == 4


def test_the_last_failed_attempt_screens_a_layperson_out_with_the_return_link(client, study):
    study.screened_out_redirect_url = "https://app.prolific.com/submissions/complete?cc=LAYOUT"
    study.save()
    qualification_rule_save(
        study=study, flow="lay", group="layperson", share_percent=100, on_fail="screen_out"
    )
    participant, _ = begin(client, study)
    answer_all(client, participant, right=1)
    page = client.get(practice_url(participant)).content.decode()
    assert "cc=LAYOUT" in page and "Try again" not in page
    participant.refresh_from_db()
    assert participant.qualification == states.FAILED and participant.screened_out_at is not None
    assert steps.lay_next_step(participant=participant).kind == steps.PRACTICE
    for name in ("lay-start", "lay-instructions", "lay-done"):
        assert client.get(lay_url(name, participant))["Location"] in (
            practice_url(participant),
            lay_url("lay-start", participant),
        )
    assert client.get(lay_url("lay-start", participant))["Location"] == practice_url(participant)
    assert client.post(practice_url(participant), {"action": "start"}).status_code == 409


def test_without_a_rule_the_start_button_leads_to_the_first_panel(client, study):
    participant, after_start = begin(client, study)
    assert after_start == lay_url("lay-start", participant)
    first = LayItem.objects.filter(participant=participant).order_by("position").first()
    assert client.get(after_start)["Location"] == reverse(
        "surveys:lay-panel", args=[participant.token, first.pk, "original"]
    )
    participant.refresh_from_db()
    assert participant.qualification == states.NONE


def test_the_console_offers_the_lay_round_and_refuses_a_group_with_no_items(study):
    assert ("lay", "layperson", 2) in [(s.flow, s.group, s.items) for s in round_settings(study=study)]
    with pytest.raises(Exception, match="no practice items for this rater group"):
        qualification_rule_save(study=study, flow="lay", group="nurse", share_percent=50)
