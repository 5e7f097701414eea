"""Reading a study's instruments: the current version per flow (what a survey page asks), and every
answer given under them, bound columns and ItemAnswer rows alike, as item key → value (the engine's
one read, which exports and analysis by item build on).

The current instrument is asked by every survey request, so it costs no query in the steady state:
`Study.instruments_stamp` (loaded with the participant) names the current versions, and the parsed
instruments are cached per process under (study id, stamp). A new version or an in-place edit
changes the stamp in the same transaction, so no process serves a stale instrument to a request that
read the new stamp."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, QuerySet

from annotation.instrument_binding import (
    LAYPERSON_PRESET,
    PROTOCOL_BINDINGS,
    RADIOLOGIST_PRESET,
    item_value_from_json,
)
from annotation.models import (
    ExpertRating,
    ExpertSourceJudgement,
    ItemAnswer,
    LayAnswer,
    LayPreference,
    Study,
    StudyInstrument,
)
from instruments.answers import AnswerValue
from instruments.presets import preset_load
from instruments.schema import Instrument, Item
from instruments.validation import instrument_from_data

EXPERT = StudyInstrument.Flow.EXPERT.value
LAY = StudyInstrument.Flow.LAY.value
# The instrument each flow asks in a study that has none of its own: every new study gets these
# (annotation/instrument_services.py), and a study made before them got them by migration.
PROTOCOL_PRESETS = {EXPERT: RADIOLOGIST_PRESET, LAY: LAYPERSON_PRESET}


def instruments_stamp(rows: Iterable[tuple[int, str]]) -> str:
    """Study.instruments_stamp of its current versions' (row id, fingerprint)s."""
    canonical = ",".join(f"{pk}:{fingerprint}" for pk, fingerprint in sorted(rows))
    return hashlib.sha256(canonical.encode()).hexdigest() if canonical else ""


@dataclass(frozen=True)
class CurrentInstrument:
    """The instrument a flow asks, with its StudyInstrument row (None: the preset, no row yet)."""

    row_id: int | None
    instrument: Instrument
    # What the flows derive from this version (a page's wording per language), kept with it.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def language(self, wanted: str) -> str:
        """The language to show: the study's when the instrument offers it, else its default."""
        return wanted if wanted in self.instrument.languages else self.instrument.default_language

    @functools.cached_property
    def added_items(self) -> tuple[Item, ...]:
        """The items stored in ItemAnswer (not bound to a typed column)."""
        bound = PROTOCOL_BINDINGS.get(self.instrument.key, {})
        return tuple(item for item in self.instrument.items if item.key not in bound)


@functools.cache
def _preset(flow: str) -> CurrentInstrument:
    return CurrentInstrument(row_id=None, instrument=preset_load(PROTOCOL_PRESETS[flow]))


@functools.lru_cache(maxsize=1024)
def _current_by_stamp(study_id: int, stamp: str) -> dict[str, CurrentInstrument]:
    rows = StudyInstrument.objects.filter(study_id=study_id, is_current=True).values_list(
        "pk", "flow", "definition"
    )
    return {
        flow: CurrentInstrument(row_id=pk, instrument=instrument_from_data(definition))
        for pk, flow, definition in rows
    }


def study_instrument_current(*, study: Study, flow: str) -> CurrentInstrument:
    """The instrument `flow` asks in `study` now. No query while the study's stamp is cached."""
    if not study.instruments_stamp:
        return _preset(flow)
    found = _current_by_stamp(study.pk, study.instruments_stamp).get(flow)
    return found if found is not None else _preset(flow)


# --- Every answer, through the instrument --------------------------------------------------------------


@dataclass(frozen=True)
class AnswerKey:
    """Whose answer to which item about what: the lay flow asks Q1-Q3 in two phases, so the phase is
    part of the key ("" where the flow has no phases)."""

    participant_id: int
    item_key: str
    source_id: int
    shown_text_id: int | None = None
    phase: str = ""


def instrument_answers(*, study: Study, flow: str) -> dict[AnswerKey, AnswerValue]:
    """Every answer given in `flow` of `study`, by (participant, item, target, phase): the bound
    items' from their typed columns (as the item's values: codes, not level names), every other
    item's from ItemAnswer (of every version of the flow's instruments). Unanswered items are
    absent."""
    current = study_instrument_current(study=study, flow=flow)
    bindings = PROTOCOL_BINDINGS.get(current.instrument.key, {})
    answers: dict[AnswerKey, AnswerValue] = {}

    def put(key: AnswerKey, stored: object) -> None:
        value = bindings[key.item_key].value_of(stored)
        if value is not None:
            answers[key] = value

    if flow == EXPERT:
        aspects = [key for key, b in bindings.items() if b.model is ExpertRating]
        rated = ExpertRating.objects.filter(participant__study=study).values_list(
            "participant_id", "shown_text__source_id", "shown_text_id", *(bindings[k].column for k in aspects)
        )
        for participant_id, source_id, text_id, *values in rated:
            for key, stored in zip(aspects, values, strict=True):
                put(AnswerKey(participant_id, key, source_id, text_id), stored)
        judged = [key for key, b in bindings.items() if b.model is ExpertSourceJudgement]
        judgements = ExpertSourceJudgement.objects.filter(participant__study=study).values_list(
            "participant_id", "source_id", *(bindings[k].column for k in judged)
        )
        for participant_id, source_id, *values in judgements:
            for key, stored in zip(judged, values, strict=True):
                put(AnswerKey(participant_id, key, source_id), stored)
    elif flow == LAY:
        questions = [key for key, b in bindings.items() if b.model is LayAnswer]
        lay_answers = LayAnswer.objects.filter(item__participant__study=study).values_list(
            "item__participant_id",
            "item__source_id",
            "item__shown_text_id",
            "phase",
            *(bindings[k].column for k in questions),
        )
        item_of = {item.key: item for item in current.instrument.items}
        for participant_id, source_id, text_id, phase, *values in lay_answers:
            for key, stored in zip(questions, values, strict=True):
                # Q4 (helpfulness) is about the simplification shown; Q1-Q3 about the sentence.
                target = text_id if item_of[key].applies_to == "simplification" else None
                put(AnswerKey(participant_id, key, source_id, target, phase), stored)
        preferences = LayPreference.objects.filter(item__participant__study=study).select_related("item")
        for preference in preferences.prefetch_related("most", "least"):
            lay_item = preference.item
            for key, b in bindings.items():
                if b.model is not LayPreference:
                    continue
                stored = getattr(preference, b.column)
                if b.column in ("most", "least"):
                    stored = {text.pk for text in stored.all()}
                put(AnswerKey(lay_item.participant_id, key, lay_item.source_id, None, "preference"), stored)
    definitions = dict(StudyInstrument.objects.filter(study=study, flow=flow).values_list("pk", "definition"))
    items = {
        pk: {item.key: item for item in instrument_from_data(definition).items}
        for pk, definition in definitions.items()
    }
    added = ItemAnswer.objects.filter(instrument__in=definitions.keys()).values_list(
        "participant_id", "instrument_id", "item_key", "source_id", "shown_text_id", "value"
    )
    for participant_id, instrument_id, item_key, source_id, text_id, value in added:
        item = items[instrument_id][item_key]
        phase = item.phases[0] if item.phases else ""
        answers[AnswerKey(participant_id, item_key, source_id, text_id, phase)] = item_value_from_json(
            item, value
        )
    return answers


# --- The researcher's view of the versions ------------------------------------------------------------


def study_instrument_row(*, study: Study, key: str) -> StudyInstrument | None:
    """The current version row of instrument `key` in `study` (None: the study does not ask it)."""
    return StudyInstrument.objects.filter(study=study, key=key, is_current=True).first()


def study_instrument_versions(*, study: Study, key: str | None = None) -> QuerySet[StudyInstrument]:
    """Every version of the study's instruments (of `key` only, when given), newest first per key,
    with who saved it and `n_answers`, the ItemAnswer rows given under it."""
    rows = StudyInstrument.objects.filter(study=study)
    if key is not None:
        rows = rows.filter(key=key)
    return (
        rows.select_related("created_by")
        .annotate(n_answers=Count("answers"))
        .order_by("flow", "key", "-version")
    )
