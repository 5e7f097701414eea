"""The four kinds of study a study archive must carry whole, built through their services: a
protocol study with error spans and planted controls, seed 002's pairs against the reference,
seed 000's sentence matching and a pairwise study (the archive's round-trip and browser tests)."""

from __future__ import annotations

from django.db import transaction

from annotation import participant_services
from annotation.models import (
    AnswerRevision,
    ExpertItem,
    Participant,
    PlantedControl,
)
from generation.services.controls import study_controls_plant
from surveys.compare_two.services import (
    pairwise_answer_save,
    pairwise_instrument_attach,
    pairwise_tasks_prepare,
)
from surveys.radiologist import assignment, pages
from surveys.radiologist import controls as planted
from tests.annotation import answers
from tests.annotation.factories import build_study
from tests.evaluation.instrument_studies import seed000_study, seed002_study
from tests.evaluation.span_studies import SPAN_ITEM, span_study


def protocol_study(slug: str):
    """The protocol's radiologist pages with the error-span item, planted controls mixed in, whole
    pages answered (protocol aspects, spans, control rows) and one answer changed (a revision)."""
    study, _, people = span_study(slug=slug, raters=2)
    answers.item_answers().filter(participant__study=study).delete()  # the pages write their own
    study_controls_plant(study=study, rate=0.3, seed=3)
    for person in people:
        for item in assignment.expert_items_ensure(participant=person)[:4]:
            page = pages.expert_page_get(item=item)
            data = {"original-severity": "Mild", "original-simplicity": "3"}
            data |= {cell.field: "4" for row in page.texts for cell in row.aspects}
            pages.expert_page_save(participant=person, item=item, data=data, time_spent_ms=1200)
            data = {cell.field: "2" for row in page.texts[:1] for cell in row.aspects[:1]}
            pages.expert_page_save(participant=person, item=item, data=data)
            for _, control_id in item.control_slots:
                control = PlantedControl.objects.get(pk=control_id)
                span = {"start": control.start, "end": control.end, "category": control.category,
                        "severity": control.severity}  # fmt: skip
                with transaction.atomic():  # as the page saves it
                    planted.control_answer_save(
                        participant=person, control=control, added=[(SPAN_ITEM, [span])]
                    )
    assert answers.control_answers(study=study)
    assert ExpertItem.objects.filter(participant__study=study).exclude(control_slots=[]).exists()
    assert AnswerRevision.objects.filter(participant__study=study).exists()
    return study


def pairwise_study(slug: str):
    study = build_study(slug=slug, n_sources=4, systems=("a", "b", "c"))
    instrument = pairwise_instrument_attach(study=study)
    for n in range(3):
        person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
        for k, task in enumerate(pairwise_tasks_prepare(participant=person, instrument=instrument)):
            pairwise_answer_save(task=task, choice=("left", "right", "tie")[(n + k) % 3], reason=f"r{n}{k}")
            if k == 0:
                pairwise_answer_save(task=task, choice="neither", reason="changed my mind")
    return study


KINDS = {
    "protocol": protocol_study,
    "seed002": lambda slug: seed002_study(slug=slug, n_sources=4)[0],
    "seed000": lambda slug: seed000_study(slug=slug, n_sources=4)[0],
    "pairwise": pairwise_study,
}
