"""Archives written before the one answer store hold the protocol's answers in typed tables
(`annotation.expertrating`, `annotation.expertsourcejudgement`, `annotation.layanswer`,
`annotation.laypreference`, `annotation.plantedcontrolanswer`) and revisions that name them.
Importing such an archive (format version 1 or 2) maps each typed row into the item answers of the
protocol's items (annotation/answer_selectors.py lists them), as migration
annotation/0021_typed_answers_to_item_answers did on the exporting server's own database: values
and scores as the items code them, a typed row's time on its first item answer, its timestamps
kept; each revision of a typed row becomes one revision per changed item.

Rows are checked as the answer services check them (1-5 aspects, level names, text): a wrong one is
named by table and row, and the import (one transaction) leaves nothing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils.dateparse import parse_datetime

from annotation import scales
from annotation.answer_store import flow_instrument_id
from annotation.answer_writes import free_text_clean, level_clean, likert_clean
from annotation.instrument_binding import (
    JUDGEMENT,
    LAY,
    LAYPERSON_PRESET,
    PREFERENCE,
    PROTOCOL_BINDINGS,
    RADIOLOGIST_PRESET,
    RATING,
    SHAPE_ITEMS,
)
from annotation.models import (
    AnswerRevision,
    ItemAnswer,
    LayItem,
    Participant,
    PlantedControl,
    SimplificationText,
    Source,
    Study,
    StudyInstrument,
)

if TYPE_CHECKING:
    from evaluation.exports.study_archive_reader import BoundedArchive

# The typed tables, in the order they were archived, with the shape their rows are read as.
LEGACY_TABLES = {
    "annotation.expertrating": RATING,
    "annotation.expertsourcejudgement": JUDGEMENT,
    "annotation.layanswer": LAY,
    "annotation.laypreference": PREFERENCE,
    "annotation.plantedcontrolanswer": "control",
}
# AnswerRevision.answer_type of a typed row, and its table.
LEGACY_REVISION_TYPES = {
    "annotation.ExpertRating": "annotation.expertrating",
    "annotation.ExpertSourceJudgement": "annotation.expertsourcejudgement",
    "annotation.LayAnswer": "annotation.layanswer",
    "annotation.LayPreference": "annotation.laypreference",
    "annotation.PlantedControlAnswer": "annotation.plantedcontrolanswer",
}
_PRESET = {RATING: RADIOLOGIST_PRESET, JUDGEMENT: RADIOLOGIST_PRESET, LAY: LAYPERSON_PRESET}
_PRESET[PREFERENCE] = LAYPERSON_PRESET
_FLOW = {
    RADIOLOGIST_PRESET: StudyInstrument.Flow.EXPERT.value,
    LAYPERSON_PRESET: StudyInstrument.Flow.LAY.value,
}


class LegacyError(ValueError):
    """A typed row the answer services would refuse (the caller names table and row)."""


class LegacyAnswers:
    """The typed rows of one archive, written as item answers of the imported study. `keys` are
    the importer's {model: {archived key: new key}} of the rows imported so far."""

    def __init__(self, *, archive: BoundedArchive, suffix: str, keys: Mapping[type, Mapping[Any, Any]]):
        self.archive = archive
        self.suffix = suffix
        self.keys = keys
        # (table, archived key) -> {item key: new ItemAnswer id}
        self.moved: dict[tuple[str, Any], dict[str, int]] = {}
        self.counts: dict[str, int] = {}

    def present(self) -> bool:
        return any(self.archive.has(f"{label}.{self.suffix}") for label in LEGACY_TABLES)

    def import_all(self, *, study: Study) -> None:
        instruments = {preset: flow_instrument_id(study=study, flow=flow) for preset, flow in _FLOW.items()}
        for label, shape in LEGACY_TABLES.items():
            name = f"{label}.{self.suffix}"
            if not self.archive.has(name):
                continue
            number = 0
            batch: list[tuple[tuple[str, Any], ItemAnswer]] = []
            for number, row in enumerate(self.archive.rows(name), start=1):
                where = f"{name}, row {number}"
                if not isinstance(row, dict) or row.get("model") != label or "pk" not in row:
                    raise LegacyError(f"{where}: not a row of {label}")
                try:
                    answers = list(self._answers(shape, row.get("fields") or {}, instruments))
                except (LegacyError, ValidationError, KeyError, TypeError, ValueError) as exc:
                    raise LegacyError(f"{where}: {_reason(exc)}") from None
                batch += [((label, row["pk"]), answer) for answer in answers]
            self.counts[label] = number
            self._insert(batch)

    def _key(self, model: type, old: Any, name: str) -> Any:
        try:
            return self.keys[model][old]
        except (KeyError, TypeError):
            raise LegacyError(f"{name} refers to a row the archive does not hold") from None

    def _answers(self, shape: str, fields: Mapping[str, Any], instruments) -> Iterator[ItemAnswer]:
        times = {
            "time_spent_ms": max(0, int(fields.get("time_spent_ms") or 0)),
            "created_at": parse_datetime(str(fields.get("created_at") or "")),
            "updated_at": parse_datetime(str(fields.get("updated_at") or "")),
        }
        if shape == "control":
            yield from self._control_answers(fields, instruments, times)
            return
        preset = _PRESET[shape]
        common: dict[str, Any] = {"instrument_id": instruments[preset]}
        if shape in (RATING, JUDGEMENT):
            common["participant_id"] = self._key(Participant, fields.get("participant"), "participant")
        if shape == RATING:
            text = self._key(SimplificationText, fields.get("shown_text"), "shown_text")
            common["shown_text_id"] = text
            common["source_id"] = SimplificationText.objects.values_list("source_id", flat=True).get(pk=text)
        elif shape == JUDGEMENT:
            common["source_id"] = self._key(Source, fields.get("source"), "source")
        else:
            item = LayItem.objects.values("participant_id", "source_id", "shown_text_id").get(
                pk=self._key(LayItem, fields.get("item"), "item")
            )
            common["participant_id"], common["source_id"] = item["participant_id"], item["source_id"]
            common["phase"] = fields.get("phase") if shape == LAY else ItemAnswer.Phase.PREFERENCE
            if shape == LAY and common["phase"] not in ("original", "assisted"):
                raise LegacyError(f"phase {common['phase']!r} is not original or assisted")
            item_text = item["shown_text_id"]
        language = Participant.objects.values_list("language", flat=True).get(pk=common["participant_id"])
        first = True
        for column, key in SHAPE_ITEMS[shape].items():
            stored = fields.get(column)
            if shape == PREFERENCE and column in ("most", "least"):
                stored = {self._key(SimplificationText, old, column) for old in stored or ()}
            coded = PROTOCOL_BINDINGS[preset][key].answer_of(_checked(column, stored, shape))
            if coded is None:
                continue
            target = dict(common)
            if key == "helpfulness":
                target["shown_text_id"] = item_text
            yield ItemAnswer(
                **target,
                item_key=key,
                value=coded[0],
                score=coded[1],
                language=language,
                **{**times, "time_spent_ms": times["time_spent_ms"] if first else 0},
            )
            first = False

    def _control_answers(self, fields, instruments, times) -> Iterator[ItemAnswer]:
        participant = self._key(Participant, fields.get("participant"), "participant")
        control = PlantedControl.objects.select_related("degrades").get(
            pk=self._key(PlantedControl, fields.get("control"), "control")
        )
        common = {
            "participant_id": participant,
            "instrument_id": instruments[RADIOLOGIST_PRESET],
            "source_id": control.degrades.source_id,
            "control_id": control.pk,
        }
        scores = fields.get("scores") or {}
        added = fields.get("added") or {}
        if not isinstance(scores, dict) or not isinstance(added, dict):
            raise LegacyError("scores and added are objects")
        values: list[tuple[str, Any, float | None]] = []
        for aspect, value in scores.items():
            if aspect not in scales.EXPERT_ASPECTS:
                raise LegacyError(f"{aspect!r} is not an aspect")
            if value is not None:
                value = likert_clean(aspect, value)
                values.append((aspect, value, float(value)))
        for key, value in added.items():
            if value is not None:
                values.append((key, value, _added_score(value)))
        if fields.get("comment"):
            values.append(("comment", free_text_clean("comment", fields["comment"]), None))
        language = Participant.objects.values_list("language", flat=True).get(pk=participant)
        for n, (key, value, score) in enumerate(values):
            yield ItemAnswer(
                **common,
                item_key=key,
                value=value,
                score=score,
                language=language,
                **{**times, "time_spent_ms": times["time_spent_ms"] if n == 0 else 0},
            )

    def _insert(self, batch: list[tuple[tuple[str, Any], ItemAnswer]]) -> None:
        if not batch:
            return
        objs = [obj for _, obj in batch]
        opts = ItemAnswer._meta
        fields = [f for f in opts.concrete_fields if f is not opts.pk and not f.generated]
        try:
            with transaction.atomic(savepoint=False):
                # raw: the archived timestamps are kept, not replaced by now.
                manager: Any = ItemAnswer._base_manager
                returned = manager._insert(
                    objs, fields=fields, returning_fields=opts.db_returning_fields, raw=True
                )
        except DatabaseError as exc:
            raise LegacyDatabaseError(str(exc).strip()) from exc
        for (typed, obj), values in zip(batch, returned, strict=True):
            self.moved.setdefault(typed, {})[obj.item_key] = values[0]

    def revisions(self, fields: Mapping[str, Any], where: str) -> list[AnswerRevision]:
        """One revision per item of a typed row's revision (its `fields` as archived, keys of the
        copy already in place for the participant)."""
        label = LEGACY_REVISION_TYPES[fields["answer_type"]]
        shape = LEGACY_TABLES[label]
        moved = self.moved.get((label, fields.get("answer_id")), {})
        previous = fields.get("previous")
        if not isinstance(previous, dict):
            raise LegacyError(f"{where}: previous is not an object")
        out = []
        for column, value in previous.items():
            if shape == "control":
                key = column
                coded = value
            else:
                key = SHAPE_ITEMS[shape].get(column)
                if key is None:
                    continue
                preset = _PRESET[shape]
                try:
                    answer = PROTOCOL_BINDINGS[preset][key].answer_of(value)
                except (KeyError, TypeError, ValueError) as exc:
                    raise LegacyError(f"{where}: {_reason(exc)}") from None
                coded = answer[0] if answer is not None else value
            answer_id = moved.get(key)
            out.append(
                AnswerRevision(
                    participant_id=fields["participant"],
                    answer_type=ItemAnswer._meta.label,
                    # An answer emptied since (a cleared comment) has no row: 0, its item named.
                    answer_id=answer_id or 0,
                    previous={"value": coded} if answer_id else {"value": coded, "item_key": key},
                    previous_at=_when(fields.get("previous_at"), where),
                    revised_at=_when(fields.get("revised_at"), where),
                )
            )
        return out


class LegacyDatabaseError(Exception):
    """The database refused the item answers of an older archive's typed rows."""


def _checked(column: str, stored: Any, shape: str) -> Any:
    """A typed column's archived value, checked as the answer services check it."""
    if stored is None or stored == "" or isinstance(stored, (set, frozenset)):
        return stored
    if shape == LAY or column == "severity":
        scale = scales.SEVERITY if column == "severity" else scales.LAY_SCALES[column]
        return level_clean(column, stored, scale)
    if column in scales.EXPERT_ASPECTS or column == "simplicity":
        return likert_clean(column, stored)
    return free_text_clean(column, stored)


def _added_score(value: Any) -> float | None:
    # item_value_code of an added item's stored value: the code or count, the number of error
    # spans (a list of marks), none for text and choices.
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list) and all(isinstance(v, dict) and "start" in v for v in value):
        return float(len(value))
    return None


def _when(value: Any, where: str) -> Any:
    parsed = parse_datetime(str(value or ""))
    if parsed is None:
        raise LegacyError(f"{where}: {value!r} is not a time")
    return parsed


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)
