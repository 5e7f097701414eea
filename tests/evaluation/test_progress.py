"""evaluation/progress.py and the researcher's progress page: one participant status for every
page, one Latin-square balance, the safety gate's flags, attention-check failures by pseudonym,
and access for the study's own researchers (staff or not)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from annotation import participant_services
from annotation.models import AttentionCheck, LayItem, Participant, Simplification
from evaluation import progress
from surveys.lay import assignment
from surveys.radiologist import services as expert_answers
from tests.annotation.factories import build_study
from tests.evaluation.analysis.test_study_frames import build_answered_study

pytestmark = pytest.mark.django_db
LAY = Participant.Role.LAYPERSON


def _consented(study, **kwargs) -> Participant:
    participant = participant_services.participant_create(study=study, role=LAY, **kwargs)
    return participant_services.participant_consent(participant=participant, accepted=True)


def test_balance_counts_assigned_and_credited():
    study = build_answered_study()
    balance = progress.latin_square_balance(study=study).frame().set_index(["source", "system"])
    # Four participants, rows 0..3: every (source, system) is assigned exactly once, and answered.
    assert (balance["assigned"] == 1).all() and (balance["answered"] == 1).all()
    assert (balance["pending"] == 0).all()
    # On s01, the cot_bs item also credits cot_sc and vice versa.
    assert balance.loc[("s01", "cot_bs"), "credited"] == 2
    assert balance.loc[("s01", "cot_sc"), "credited"] == 2
    assert balance.loc[("s01", "cot_sc"), "shared"] == 1
    assert balance.loc[("s02", "cot_sc"), "credited"] == 1
    assert balance.loc[("s02", "cot_sc"), "shared"] == 0


def test_progress_by_role():
    study = build_answered_study(n_lay=3)
    summary = progress.progress_by_role(study=study)
    assert {k: v for k, v in summary["layperson"].items() if k != "statuses"} == {
        "participants": 3,
        "completed": 3,
        "done": 12,
        "total": 12,
    }
    assert summary["layperson"]["statuses"]["completed"] == 3
    assert summary["radiologist"]["participants"] == 1
    records = progress.participants_progress(study=study)
    assert {r["status"] for r in records} == {"completed"}


def test_one_status_vocabulary_for_every_stage_of_a_layperson():
    study = build_study(n_sources=2)
    study.abandon_after_minutes = 60
    study.save()
    invited = participant_services.participant_create(study=study, role=LAY)
    consented = _consented(study)
    declined = participant_services.participant_consent(
        participant=participant_services.participant_create(study=study, role=LAY), accepted=False
    )
    active, idle, returned = (_consented(study) for _ in range(3))
    for participant in (active, idle, returned):
        participant_services.participant_touch(participant=participant)
        assignment.lay_survey_start(participant=participant)
    Participant.objects.filter(pk=idle.pk).update(last_activity_at=timezone.now() - timedelta(hours=2))
    Participant.objects.filter(pk=returned.pk).update(returned_at=timezone.now())
    statuses = {r["participant"]: r["status"] for r in progress.participants_progress(study=study)}
    assert statuses == {
        invited.pseudonym: "invited",
        consented.pseudonym: "consented",
        declined.pseudonym: "declined",
        active.pseudonym: "in progress",
        idle.pseudonym: "abandoned",
        returned.pseudonym: "returned",
    }
    counts = progress.progress_by_role(study=study)["layperson"]["statuses"]
    assert counts == {
        "invited": 1,
        "consented": 1,
        "in progress": 1,
        "abandoned": 1,
        "completed": 0,
        "declined": 1,
        "returned": 1,
        "screened out": 0,
    }
    rows = progress.latin_square_balance(study=study).rows
    assert sorted(
        (r["row"], r.get("in_progress", 0), r.get("abandoned", 0), r.get("returned", 0)) for r in rows
    ) == [
        (0, 1, 0, 0),
        (1, 0, 1, 0),
        (2, 0, 0, 1),
    ]


@pytest.fixture
def gated_study():
    study = build_study(n_sources=2)
    study.safety_gate_enabled = True
    study.save()
    source = study.sources.get(position=0)
    expert = participant_services.participant_create(
        study=study, role=Participant.Role.RADIOLOGIST, pseudonym="R007"
    )
    text = Simplification.objects.get(source=source, system__key="cot_bs").shown_text
    expert_answers.expert_rating_save(
        participant=expert, shown_text=text, scores={"hallucination": 1}, comment="Invents a tumour."
    )
    return study


def test_progress_page_for_the_studys_researchers_only_staff_or_not(client, gated_study):
    study = gated_study
    url = reverse("evaluation:study-progress", kwargs={"slug": study.slug})
    assert client.get(url).status_code == 302  # to the dashboard's login page
    user_model = get_user_model()
    client.force_login(user_model.objects.create_user("outsider", password="x", is_staff=True))
    assert client.get(url).status_code == 404
    researcher = user_model.objects.create_user("res", password="x")  # not staff
    study.researchers.add(researcher)
    client.force_login(researcher)
    participant = _consented(study, external_id="PROLIFIC-SECRET-1")
    participant_services.participant_touch(participant=participant)
    assignment.lay_survey_start(participant=participant)
    check = AttentionCheck.objects.create(
        study=study, position=0, prompt="Choose Blue.", options=["Red", "Blue"], expected_answer="Blue"
    )
    from surveys.lay.entry import attention_check_answer

    attention_check_answer(participant=participant, check=check, answer="Red")
    source = study.sources.get(position=0)
    item = LayItem.objects.get(participant=participant, source=source)
    assert item.assigned_system.key != "cot_bs"  # withheld by the gate
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 200
    assert "Invents a tumour." in page and "R007" in page and "hallucination" in page
    balance = progress.latin_square_balance(study=study)
    assert balance.cells[(source.pk, item.assigned_system_id)].pending == 1
    assert "+1 pending" in page
    # Attention-check failures name the pseudonym, never the recruiter's ID.
    assert participant.pseudonym in page and "Choose Blue." in page
    assert "PROLIFIC-SECRET-1" not in page
    # The dashboard links to it.
    detail = reverse("evaluation:study-detail", kwargs={"slug": study.slug})
    assert url in client.get(detail).content.decode()
