"""Writes of the compare-two flow: attaching the instrument, drawing a participant's pairs, saving an
answer."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from annotation import participant_services
from annotation.activity_services import activity_record
from annotation.answer_store import Target, answers_upsert
from annotation.instrument_services import study_instruments_stamp_refresh
from annotation.models import ItemAnswer, PairwiseTask, Participant, Simplification, Study, StudyInstrument
from instruments.answers import InvalidAnswer, item_value_validate
from instruments.presets import preset_load
from instruments.schema import ItemKind
from instruments.validation import instrument_from_data, instrument_to_data
from instruments.versioning import instrument_fingerprint, instrument_structure_fingerprint
from surveys.compare_two.assignment import Candidate, pairwise_plan
from surveys.compare_two.selectors import pairwise_instrument_current

PRESET = "pairwise_clinical"


def pairwise_instrument_attach(*, study: Study, preset: str = PRESET, actor: Any = None) -> StudyInstrument:
    """Make the study a pairwise study: its current `pairwise` instrument, created from `preset`
    unless one is current already (then returned unchanged)."""
    with transaction.atomic():
        current = pairwise_instrument_current(study=study)
        if current is not None:
            return current
        instrument = preset_load(preset)
        if not any(item.kind is ItemKind.PAIRWISE for item in instrument.items):
            raise ValidationError({"preset": f"{preset} has no pairwise item"})
        attached = StudyInstrument.objects.create(
            study=study,
            key=instrument.key,
            version=instrument.version,
            flow=StudyInstrument.Flow.PAIRWISE,
            definition=instrument_to_data(instrument),
            fingerprint=instrument_fingerprint(instrument),
            structure_fingerprint=instrument_structure_fingerprint(instrument),
            preset=preset,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        study_instruments_stamp_refresh(study=study)
        activity_record(
            study=study,
            actor=actor,
            verb="instrument.attached",
            obj=attached,
            details={"flow": attached.flow, "preset": preset},
        )
    return attached


def pairwise_consent_accept(*, participant: Participant) -> Participant:
    """The participant agreed to take part: record it and their activity."""
    participant_services.participant_consent(participant=participant, accepted=True)
    participant_services.participant_touch(participant=participant)
    # The language they are shown the comparisons in, for the exports (where none is recorded yet).
    participant_services.participant_language_record(
        participant=participant, language=participant.study.language or settings.LANGUAGE_CODE
    )
    return participant


def pairwise_tasks_prepare(*, participant: Participant, instrument: StudyInstrument) -> list[PairwiseTask]:
    """The participant's pages, drawn once (surveys/compare_two/assignment.py) and stored; calling
    again returns the stored ones. Locks the participant row so two first requests draw once."""
    with transaction.atomic():
        Participant.objects.select_for_update().filter(pk=participant.pk).values_list("pk").get()
        existing = list(PairwiseTask.objects.filter(participant=participant).order_by("position"))
        if existing:
            return existing
        by_source: dict[int, list[Candidate]] = {}
        for simplification_id, source_id, system_key, text_id in (
            Simplification.objects.filter(source__study_id=participant.study_id)
            .order_by("source__position", "system__position")
            .values_list("pk", "source_id", "system__key", "shown_text_id")
        ):
            by_source.setdefault(source_id, []).append(Candidate(simplification_id, system_key, text_id))
        index = Participant.objects.filter(study_id=participant.study_id, pk__lt=participant.pk).count()
        plan = pairwise_plan(
            sources=list(by_source.items()), participant_index=index, seed=participant.order_seed
        )
        return PairwiseTask.objects.bulk_create(
            PairwiseTask(
                participant=participant,
                instrument=instrument,
                source_id=pair.source,
                left_id=pair.left,
                right_id=pair.right,
                position=position,
            )
            for position, pair in enumerate(plan)
        )


def pairwise_answer_save(
    *, task: PairwiseTask, choice: str, reason: str = "", time_spent_ms: int = 0
) -> ItemAnswer:
    """Save (or change) the answer to one page: the pairwise item's `choice` (left, right, tie,
    neither) and the optional reason, both checked by the instrument (instruments.answers).
    `task` comes with its instrument, participant and both simplifications loaded. A bad value is
    a ValidationError naming the field; nothing is written then."""
    instrument = instrument_from_data(task.instrument.definition)
    preference = next(item for item in instrument.items if item.kind is ItemKind.PAIRWISE)
    reason_item = next((item for item in instrument.items if item.kind is ItemKind.FREE_TEXT), None)
    try:
        value: dict[str, Any] = {"choice": item_value_validate(preference, choice)}
        if reason_item is not None:
            value["reason"] = item_value_validate(reason_item, reason) or ""
    except InvalidAnswer as exc:
        # The participant reads the message (in their language); the instrument's own wording of
        # the fault (item key, allowed values) is for researchers.
        if exc.item_key == preference.key:
            raise ValidationError({"choice": _("Please choose one of the answers.")}) from None
        limit = reason_item.max_length if reason_item is not None else 0
        raise ValidationError(
            {"reason": _("The reason is too long: at most %(limit)s characters.") % {"limit": limit}}
        ) from None
    target = Target(
        source_id=task.source_id,
        shown_text_id=task.left.shown_text_id,
        reference_text_id=task.right.shown_text_id,
    )
    written = answers_upsert(
        participant=task.participant,
        instrument_id=task.instrument_id,
        target=target,
        values={preference.key: (value, None)},
        language=task.participant.language or task.participant.study.language,
        time_spent_ms=time_spent_ms,
    )
    return written[preference.key]
