"""A protocol study where two radiologists disagree: the same texts rated by both, correctness far
apart on the first source's first text, the same elsewhere; and an error-span item they mark
differently. Answers are written through the services the radiologist page calls."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from annotation.instrument_services import item_answer_save
from annotation.models import Participant, SimplificationText, Study, StudyInstrument
from studies.team_services import study_member_add
from surveys.radiologist.services import expert_rating_save, expert_source_judgement_save
from tests.annotation.factories import build_study
from tests.evaluation.span_studies import SPAN_ITEM, span_instrument

ASPECTS = {"completeness": 4, "hallucination": 5, "structure": 4, "simplicity": 4}


def disagreeing_study(*, slug: str = "adjudicate", spans: bool = True) -> dict:
    """Two radiologists (one with an account: `rater_user`) and an adjudicator member; returns the
    study, the participants, the first text and the span version."""
    study = build_study(slug=slug, n_sources=2, systems=("plain", "lay"))
    accounts = get_user_model().objects
    rater_user = accounts.create_user(f"{slug}-radiologist", password="pw")
    adjudicator = accounts.create_user(f"{slug}-adjudicator", password="pw")
    study_member_add(study=study, user=adjudicator, role="adjudicator", actor="test")
    version = None
    if spans:
        from annotation.instrument_services import study_instrument_save

        version = study_instrument_save(study=study, instrument=span_instrument(), actor=None)
    first = Participant.objects.create(study=study, role="radiologist", pseudonym="R1", user=rater_user)
    second = Participant.objects.create(study=study, role="radiologist", pseudonym="R2")
    texts = list(SimplificationText.objects.filter(source__study=study).order_by("source__position", "pk"))
    for text in texts:
        for person, correctness in ((first, 2), (second, 5)):
            disagrees = text == texts[0]
            expert_rating_save(
                participant=person,
                shown_text=text,
                scores={**ASPECTS, "correctness": correctness if disagrees else 4},
                comment=f"{person.pseudonym} thinks {correctness}" if disagrees else "",
            )
    for source in study.sources.all():
        for person in (first, second):
            expert_source_judgement_save(participant=person, source=source, severity="Healthy", simplicity=4)
    if version is not None:
        length = len(texts[0].text)
        marks = {
            first: [{"start": 0, "end": 5, "category": SPAN_ITEM.options[0].key, "severity": "minor"}],
            second: [{"start": 6, "end": 10, "category": SPAN_ITEM.options[0].key, "severity": "minor"}],
        }
        for person, given in marks.items():
            item_answer_save(
                participant=person,
                instrument_id=version.pk,
                item=SPAN_ITEM,
                raw=given,
                source_id=texts[0].source_id,
                shown_text_id=texts[0].pk,
                shown_text=texts[0].text,
            )
        assert length > 10
    return {
        "study": study,
        "raters": (first, second),
        "rater_user": rater_user,
        "adjudicator": adjudicator,
        "text": texts[0],
        "protocol": StudyInstrument.objects.get(study=study, key="protocol_003_radiologist", is_current=True),
        "version": version,
    }


def study_of(setup: dict) -> Study:
    return setup["study"]
