"""Reading a study's instruments: the current version per flow (what a survey page asks), and every
answer given under them (ItemAnswer rows), as item key → value (the engine's one read, which
exports and analysis by item build on).

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
from annotation.models import ItemAnswer, Study, StudyInstrument
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
    """Every answer given in `flow` of `study`, by (participant, item, target, phase), as the
    item's values (codes, not level names), of every version of the flow's instruments; the
    answers on planted controls are not the study's. Unanswered items are absent."""
    definitions = dict(StudyInstrument.objects.filter(study=study, flow=flow).values_list("pk", "definition"))
    items = {
        pk: {item.key: item for item in instrument_from_data(definition).items}
        for pk, definition in definitions.items()
    }
    rows = (
        ItemAnswer.objects.filter(instrument__in=definitions.keys(), control__isnull=True)
        .order_by("updated_at", "pk")
        .values_list(
            "participant_id", "instrument_id", "item_key", "source_id", "shown_text_id", "phase", "value"
        )
    )
    answers: dict[AnswerKey, AnswerValue] = {}
    for participant_id, instrument_id, item_key, source_id, text_id, phase, value in rows:
        item = items[instrument_id][item_key]
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
