"""The Django reads behind the instrument-item analysis and exports, without the scientific stack
(the export views import this in every web worker): a study's ItemAnswer rows in one query, and its
instrument versions parsed back to `instruments.schema.Instrument`s. evaluation/analysis/instrument_frames.py
builds the analysis's frames from them."""

from __future__ import annotations

import dataclasses
from typing import Any

from annotation.answer_selectors import protocol_answers
from annotation.instrument_binding import PROTOCOL_BINDINGS
from annotation.models import ItemAnswer, Study, StudyInstrument
from annotation.selectors import analysed_participants, counted_participants
from instruments.schema import Instrument
from instruments.validation import instrument_from_data

# Presets whose items the protocol's typed tables (Tables 1–3) already analyse.
PROTOCOL_PRESETS = frozenset({"protocol_003_radiologist", "protocol_003_layperson"})


def study_instruments(*, study: Study) -> dict[tuple[str, int], Instrument]:
    """Every instrument version the study has, by (key, version), as validated instruments — but
    the protocol's: its bound items are the typed tables' (Tables 1–3), so a protocol version is
    here only with the items a team added to it, and only once one of them was answered."""
    # The instrument items' answers: the protocol's own items and the planted controls' rows are
    # not theirs (annotation/answer_selectors.py reads the protocol's).
    answered = set(
        ItemAnswer.objects.filter(participant__study=study, control__isnull=True)
        .exclude(protocol_answers())
        .values_list("instrument__key", "instrument__version")
        .distinct()
    )
    found: dict[tuple[str, int], Instrument] = {}
    for key, version, definition in StudyInstrument.objects.filter(study=study).values_list(
        "key", "version", "definition"
    ):
        instrument = instrument_from_data(definition)
        bound = PROTOCOL_BINDINGS.get(key)
        if bound is not None:
            if (key, version) not in answered:
                continue
            instrument = dataclasses.replace(
                instrument, items=tuple(item for item in instrument.items if item.key not in bound)
            )
        found[(key, version)] = instrument
    return found


def instruments_outside_protocol(*, study: Study) -> bool:
    """Whether the study asks an instrument that is not one of the protocol's presets."""
    return StudyInstrument.objects.filter(study=study).exclude(preset__in=PROTOCOL_PRESETS).exists()


def answer_rows(*, study: Study, analysed_only: bool = False) -> list[tuple[Any, ...]]:
    """Every ItemAnswer of the study with what names it, one query, ordered by participant and
    target: (participant pk, pseudonym, external_id, role, participant language, answer language,
    instrument key, version, structure fingerprint, item, source key, source position, shown text
    id, reference text id, value, score, time_spent_ms, created_at, updated_at).
    `analysed_only`: without participants screened out (the analysis's rule,
    annotation.selectors.analysed_participants); the exports keep every counted participant
    (previews and the pilot's are in neither)."""
    answers = ItemAnswer.objects.filter(
        counted_participants(path="participant__"), participant__study=study, control__isnull=True
    ).exclude(protocol_answers())
    if analysed_only:
        answers = answers.filter(analysed_participants(path="participant__"))
    return list(
        answers.order_by(
            "participant_id",
            "instrument__key",
            "instrument__version",
            "source__position",
            "shown_text_id",
            "reference_text_id",
            "pk",
        ).values_list(
            "participant_id",
            "participant__pseudonym",
            "participant__external_id",
            "participant__role",
            "participant__language",
            "language",
            "instrument__key",
            "instrument__version",
            "instrument__structure_fingerprint",
            "item_key",
            "source__key",
            "source__position",
            "shown_text_id",
            "reference_text_id",
            "value",
            "score",
            "time_spent_ms",
            "created_at",
            "updated_at",
        )
    )
