"""Reading adjudication: every unit (one instrument item on one target) that raters answered, how
much they disagree (measures/stats/disagreement.py), its adjudicated label where one was recorded,
and its final label with where it came from.

The raters' answers are read through evaluation/exports/study_answers.rated_answers (the one reader of
every flow's answers). Adjudicated are the items whose answers have a consensus to find: ordinal
scales, single and multiple choices, pairwise outcomes and error spans, on the radiologist page and
the rating flows (pairs, pairwise). The lay panels' questions (understanding, confidence) report
what each layperson experienced: their differences are data, not errors, and are never queued.
Free-text answers on the same target (a rating's comment, a pairwise reason) are the raters'
justifications, shown beside their answers."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Participant, Source, Study, StudyInstrument
from evaluation.exports.study_answers import RatedAnswer, rated_answers
from evaluation.models import AdjudicatedLabel
from instruments.schema import NOT_APPLICABLE, Instrument, Item, ItemKind
from instruments.validation import instrument_from_data
from measures.stats.disagreement import (
    ADJUDICATED,
    Disagreement,
    FinalLabel,
    category_disagreement,
    final_label,
    ordinal_disagreement,
    set_disagreement,
    span_disagreement,
)

ADJUDICATED_FLOWS = (
    StudyInstrument.Flow.EXPERT.value,
    StudyInstrument.Flow.PAIRS.value,
    StudyInstrument.Flow.PAIRWISE.value,
)
ADJUDICATED_KINDS = frozenset(
    {
        ItemKind.ORDINAL,
        ItemKind.SINGLE_CHOICE,
        ItemKind.PAIRWISE,
        ItemKind.MULTIPLE_CHOICE,
        ItemKind.ERROR_SPANS,
    }
)
_TOKEN = re.compile(r"^(\d+)\.([a-z0-9_-]+)\.(\d+)\.(\d*)\.(\d*)$")


class UnknownUnit(ValueError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """A unit token that names no unit of the study; the message says which part is wrong."""


@dataclass(frozen=True, order=True)
class UnitKey:
    """Which item on which target: instrument version (StudyInstrument pk), item key, source, shown
    text and reference text (None where the item is not about them)."""

    instrument_id: int
    item_key: str
    source_id: int
    shown_text_id: int | None = None
    reference_text_id: int | None = None

    @property
    def token(self) -> str:
        """The unit in a URL or a command line: `<instrument>.<item>.<source>.<text>.<reference>`."""
        text, reference = self.shown_text_id or "", self.reference_text_id or ""
        return f"{self.instrument_id}.{self.item_key}.{self.source_id}.{text}.{reference}"

    @classmethod
    def parse(cls, token: str) -> UnitKey:
        found = _TOKEN.match(str(token).strip())
        if not found:
            raise UnknownUnit(f"unit: {token!r} is not <instrument>.<item>.<source>.<text>.<reference>")
        instrument, item, source, text, reference = found.groups()
        return cls(
            int(instrument),
            item,
            int(source),
            int(text) if text else None,
            int(reference) if reference else None,
        )

    @classmethod
    def of(cls, answer: RatedAnswer | AdjudicatedLabel) -> UnitKey:
        return cls(
            answer.instrument_id,
            answer.item_key,
            answer.source_id,
            answer.shown_text_id,
            answer.reference_text_id,
        )


def comparable(item: Item, value: Any) -> Any:
    """A stored answer (ItemAnswer.value's JSON form) as a value two raters' answers compare by."""
    if value is None:
        return None
    if item.kind is ItemKind.PAIRWISE and isinstance(value, dict):
        return value.get("choice")
    if item.kind is ItemKind.MULTIPLE_CHOICE:
        return frozenset(value)
    if item.kind is ItemKind.ERROR_SPANS:
        # The span analysis's own Span (measures/stats/span_agreement.py), imported when needed: a
        # web worker loads no numpy until a page measures spans.
        from measures.stats.span_agreement import Span

        spans = (
            Span(int(s["start"]), int(s["end"]), str(s["category"]), str(s.get("severity", "")))
            for s in value
        )
        return tuple(sorted(spans))
    return value


def justification(item: Item, value: Any) -> str:
    """What a stored answer says besides its value (a pairwise reason)."""
    if item.kind is ItemKind.PAIRWISE and isinstance(value, dict):
        return str(value.get("reason") or "")
    return ""


def disagreement_of(item: Item, values: list[Any]) -> Disagreement:
    """The disagreement measure of `item`'s kind over its raters' comparable values."""
    if item.kind is ItemKind.ORDINAL:
        assert item.scale is not None
        codes = item.scale.codes
        return ordinal_disagreement(
            values, lowest=min(codes), highest=max(codes), not_applicable=NOT_APPLICABLE
        )
    if item.kind is ItemKind.MULTIPLE_CHOICE:
        return set_disagreement(values)
    if item.kind is ItemKind.ERROR_SPANS:
        return span_disagreement(values)
    return category_disagreement(values)


@dataclass
class RaterAnswer:
    """One rater's answer in a unit, with their justifications; `rater` is their blind label
    (Rater 1, 2, … in the order of their answers' keys, never their pseudonym)."""

    participant_id: int
    rater: str
    value: Any  # the stored JSON form
    comparable: Any
    score: float | None
    justifications: list[tuple[str, str]] = field(default_factory=list)  # (item label, text)


@dataclass
class Unit:
    key: UnitKey
    instrument: Instrument
    item: Item
    answers: list[RaterAnswer]
    disagreement: Disagreement | None
    adjudication: AdjudicatedLabel | None
    final: FinalLabel

    @property
    def token(self) -> str:
        return self.key.token

    @property
    def is_disagreement(self) -> bool:
        return self.disagreement is not None and not self.disagreement.unanimous

    @property
    def adjudicated(self) -> bool:
        return self.final.provenance == ADJUDICATED


def _instruments(study: Study) -> dict[int, Instrument]:
    return {
        pk: instrument_from_data(definition)
        for pk, definition in StudyInstrument.objects.filter(study=study).values_list("pk", "definition")
    }


def _item_label(item: Item, language: str) -> str:
    for wording in (item.title, item.short_wording, item.wording):
        if wording:
            return wording.get(language) or next(iter(wording.values()))
    return item.key


def _units(
    study: Study,
    answers: Iterable[RatedAnswer],
    labels: Iterable[AdjudicatedLabel],
    instruments: dict[int, Instrument],
) -> list[Unit]:
    rated: dict[UnitKey, list[RatedAnswer]] = {}
    # (participant, instrument, source, text, reference) -> free-text answers on that target
    said: dict[tuple[int, int, int, int | None, int | None], list[tuple[str, str]]] = {}
    for answer in answers:
        instrument = instruments.get(answer.instrument_id)
        if instrument is None:
            continue
        try:
            item = instrument.item(answer.item_key)
        except KeyError:
            continue
        target = (answer.instrument_id, answer.source_id, answer.shown_text_id, answer.reference_text_id)
        if item.kind is ItemKind.FREE_TEXT and answer.value:
            said.setdefault((answer.participant_id, *target), []).append(
                (_item_label(item, study.language), str(answer.value))
            )
        elif item.kind in ADJUDICATED_KINDS and answer.value is not None:
            rated.setdefault(UnitKey.of(answer), []).append(answer)
    adjudicated = {UnitKey.of(label): label for label in labels}
    units = []
    for key in sorted(rated.keys() | adjudicated.keys()):
        instrument = instruments[key.instrument_id]
        item = instrument.item(key.item_key)
        target = (key.instrument_id, key.source_id, key.shown_text_id, key.reference_text_id)
        given = sorted(rated.get(key, []), key=lambda a: a.participant_id)
        rows = []
        for n, answer in enumerate(given, start=1):
            row = RaterAnswer(
                answer.participant_id,
                f"Rater {n}",
                answer.value,
                comparable(item, answer.value),
                answer.score,
            )
            if reason := justification(item, answer.value):
                row.justifications.append(("Reason", reason))
            # A comment on the text, or on the source where the item is about the source.
            row.justifications += said.get((answer.participant_id, *target), [])
            rows.append(row)
        values = [row.comparable for row in rows]
        label = adjudicated.get(key)
        disagreement = disagreement_of(item, values) if len(values) >= 2 else None
        final = final_label(
            values,
            adjudicated=comparable(item, label.value) if label is not None else None,
            has_adjudication=label is not None,
        )
        units.append(Unit(key, instrument, item, rows, disagreement, label, final))
    return units


def study_units(*, study: Study, source_id: int | None = None) -> list[Unit]:
    """Every adjudicable unit of `study` (of one source where given) that a rater answered or an
    adjudicator decided, in key order."""
    answers = rated_answers(study=study, flows=ADJUDICATED_FLOWS, source_id=source_id)
    labels = AdjudicatedLabel.objects.filter(study=study)
    if source_id is not None:
        labels = labels.filter(source_id=source_id)
    return _units(study, answers, labels, _instruments(study))


def adjudication_queue(*, study: Study, include_decided: bool = False) -> list[Unit]:
    """The units whose raters disagree, most disagreement first (then in key order); those already
    adjudicated only with `include_decided`."""
    units = [
        unit
        for unit in study_units(study=study)
        if unit.is_disagreement and (include_decided or unit.adjudication is None)
    ]
    return sorted(units, key=lambda unit: -unit.disagreement.score if unit.disagreement else 0)


def adjudication_unit(*, study: Study, token: str) -> Unit:
    """The unit `token` names (UnitKey.token), with its raters' answers; UnknownUnit when the study
    has no such unit."""
    key = UnitKey.parse(token)
    if not Source.objects.filter(study=study, pk=key.source_id).exists():
        raise UnknownUnit(f"unit: the study has no source {key.source_id}")
    for unit in study_units(study=study, source_id=key.source_id):
        if unit.key == key:
            return unit
    raise UnknownUnit(f"unit: {token!r}: no rater answered this item on this target")


def rater_users(*, unit: Unit) -> set[int]:
    """The accounts (user ids) of the unit's raters: a member with one of these may not adjudicate
    it."""
    ids = [answer.participant_id for answer in unit.answers]
    return set(Participant.objects.filter(pk__in=ids, user__isnull=False).values_list("user_id", flat=True))


def _json_value(value: Any) -> Any:
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, tuple):
        return [span._asdict() if hasattr(span, "_asdict") else span for span in value]
    return value


def unit_records(*, study: Study, units: Iterable[Unit]) -> list[dict[str, Any]]:
    """The units as JSON-ready records (the command's `list` and the API's queue): blind, so the
    raters are "Rater 1", "Rater 2", …; the source by its key."""
    units = list(units)
    sources = dict(
        Source.objects.filter(study=study, pk__in={u.key.source_id for u in units}).values_list("pk", "key")
    )
    return [
        {
            "unit": unit.token,
            "instrument": unit.instrument.key,
            "version": unit.instrument.version,
            "item": unit.item.key,
            "item_kind": unit.item.kind.value,
            "source": sources.get(unit.key.source_id, ""),
            "text_id": unit.key.shown_text_id,
            "reference_text_id": unit.key.reference_text_id,
            "raters": len(unit.answers),
            "disagreement": unit.disagreement.score if unit.disagreement else None,
            "measure": unit.disagreement.measure if unit.disagreement else None,
            # For categories: the answer more than half of the raters gave (null: no majority).
            "majority": unit.disagreement.majority if unit.disagreement else None,
            "answers": [
                {
                    "rater": answer.rater,
                    "value": answer.value,
                    "justifications": [
                        {"label": label, "text": text} for label, text in answer.justifications
                    ],
                }
                for answer in unit.answers
            ],
            "adjudication": None
            if unit.adjudication is None
            else {
                "value": unit.adjudication.value,
                "reason": unit.adjudication.reason,
                "guideline_gap": unit.adjudication.guideline_gap,
                "note": unit.adjudication.note,
                "created_at": unit.adjudication.created_at.isoformat(),
            },
            "final_value": _json_value(unit.final.value),
            "provenance": unit.final.provenance,
        }
        for unit in units
    ]
