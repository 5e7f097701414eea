"""A planted control left unmarked on a study with error spans: stored as "no error marked" ([]),
as a real row stores it; the reliability figures and the progress page read every partial answer.
(The nulls an earlier version stored were migrated by 0018; 0021 moves the answers into the store,
tests/annotation/test_answer_store_migration.py.)"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import participant_services
from annotation.models import ItemAnswer, Participant, PlantedControl
from evaluation.analysis.planted_control_scores import marked_spans, study_rater_reliability
from generation.services.controls import study_controls_plant
from studies.error_span_services import study_error_spans_add
from surveys.radiologist import assignment, pages
from tests.annotation import answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db


def _span_study(slug: str):
    study = build_study(slug=slug, n_sources=6, systems=("a", "b", "c", "d"))
    study_controls_plant(study=study, rate=0.2, seed=3)
    study_error_spans_add(study=study, actor=None)
    study.refresh_from_db()
    return study


def _answer_pages_without_marks(study, seed: int) -> Participant:
    """Every row scored, every error-span widget posting "[]" (what it sends for a row left
    unmarked), as the browser does."""
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    Participant.objects.filter(pk=participant.pk).update(order_seed=seed)
    participant.refresh_from_db()
    for item in assignment.expert_items_ensure(participant=participant):
        page = pages.expert_page_get(item=item)
        data = {"original-severity": "Mild", "original-simplicity": "3"}
        for row in page.texts:
            data |= {cell.field: "4" for cell in row.aspects}
            data[f"{row.label}-error_spans"] = "[]"
        pages.expert_page_save(participant=participant, item=item, data=data)
    return participant


def test_an_unmarked_control_is_stored_as_no_error_marked_and_the_progress_page_answers(client):
    study = _span_study("no-marks-page")
    participant = _answer_pages_without_marks(study, seed=7)
    stored = [answer.added for answer in answers.control_answers(participant=participant)]
    assert stored and all(added == {"error_spans": []} for added in stored)

    rows = study_rater_reliability(study=study)
    assert len(rows) == 1
    assert rows[0]["span_found"] == 0.0  # scored controls, not one planted error marked
    client.force_login(get_user_model().objects.create_superuser("no-marks-admin", password="pw"))
    page = client.get(reverse("evaluation:study-progress", args=[study.slug]))
    assert page.status_code == 200
    section = client.get(reverse("evaluation:study-progress-section", args=[study.slug]))
    assert section.status_code == 200


def test_a_control_whose_planted_span_is_marked_is_found():
    study = _span_study("no-marks-found")
    participant = _answer_pages_without_marks(study, seed=9)
    control = PlantedControl.objects.filter(answers__participant=participant).first()
    span = {"start": control.start, "end": max(control.end, control.start + 1)}
    span |= {"category": "wrong_finding_or_location", "severity": "could_harm"}
    ItemAnswer.objects.filter(participant=participant, control=control, item_key="error_spans").update(
        value=[span], score=1.0
    )
    (row,) = study_rater_reliability(study=study)
    n = len(answers.control_answers(participant=participant))
    assert row["span_found"] == pytest.approx(1 / n)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (None, []),
        ([], []),
        ({"start": 1, "end": 2}, []),
        (
            [{"start": 1, "end": 4, "category": "x", "severity": "y"}, {"start": "1"}, None, {"end": 3}],
            [(1, 4)],
        ),
        ([{"start": True, "end": 2}], []),
    ],
)
def test_marked_spans_reads_every_partial_answer(stored, expected):
    assert marked_spans(stored) == expected
