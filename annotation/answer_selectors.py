"""The protocol's answers in its typed shapes, read from the one answer store (ItemAnswer).

The consumers that need the protocol's shape (Tables 1-3, the safety gate, the Latin-square
balance, progress, rater reliability, the exports' wide layout, the judges' inputs, the archive's
tables of an older archive) read it here, in the attribute names the typed tables had, so that
their arithmetic does not change:

- `RatingRow`: a radiologist's rating of one shown text (five aspects 1-5 or None, comment);
- `JudgementRow`: their judgement of an original (severity by level name or "", simplicity, comment);
- `LayAnswerRow`: one lay panel's answers (phase "original" or "assisted", Q1-Q4 by level name or "");
- `PreferenceRow`: panel 3 (most / least liked text ids, the justifications);
- `ControlAnswerRow`: a radiologist's answers on a planted control ({aspect: 1-5}, the added
  items' stored values, the comment).

A row's `id` is its first item answer's id (rows sort in the order they were first answered), its
time the sum of its item answers' times, `created_at` / `updated_at` the first and the last of
theirs. Each function takes a `where` (a Q over ItemAnswer, e.g. `counted_participants(path=
"participant__")`) besides the study. Where a participant answered a protocol item under two
versions of the instrument, the later answer counts (as the typed row's update did)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    Func,
    IntegerField,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, Concat

from annotation import scales
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
from annotation.models import ItemAnswer, LayItem, SimplificationText, Study

_COLUMNS = (
    "pk",
    "participant_id",
    "source_id",
    "shown_text_id",
    "control_id",
    "phase",
    "item_key",
    "value",
    "time_spent_ms",
    "created_at",
    "updated_at",
)


@dataclass
class _Row:
    """What every typed shape shares."""

    id: int
    participant_id: int
    source_id: int
    time_spent_ms: int = 0
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None

    @property
    def pk(self) -> int:
        return self.id


@dataclass
class RatingRow(_Row):
    shown_text_id: int = 0
    correctness: int | None = None
    completeness: int | None = None
    hallucination: int | None = None
    structure: int | None = None
    simplicity: int | None = None
    comment: str = ""

    ASPECTS = tuple(scales.EXPERT_ASPECTS)

    @property
    def is_complete(self) -> bool:
        return all(getattr(self, a) is not None for a in self.ASPECTS)


@dataclass
class JudgementRow(_Row):
    severity: str = ""
    simplicity: int | None = None
    comment: str = ""

    @property
    def is_complete(self) -> bool:
        return bool(self.severity) and self.simplicity is not None


@dataclass
class LayAnswerRow(_Row):
    phase: str = ""
    item_id: int | None = None
    understanding: str = ""
    confidence: str = ""
    urgency_confidence: str = ""
    severity_guess: str = ""
    helpfulness: str = ""


@dataclass
class PreferenceRow(_Row):
    item_id: int | None = None
    most: frozenset[int] = frozenset()
    least: frozenset[int] = frozenset()
    most_justification: str = ""
    least_justification: str = ""
    order_shown: list[int] = field(default_factory=list)


@dataclass
class ControlAnswerRow(_Row):
    control_id: int = 0
    scores: dict[str, int] = field(default_factory=dict)
    added: dict[str, Any] = field(default_factory=dict)
    comment: str = ""


_SHAPE_OF = {RATING: RatingRow, JUDGEMENT: JudgementRow, LAY: LayAnswerRow, PREFERENCE: PreferenceRow}


def _grouped(rows: Iterable[tuple], key_of, make) -> list:
    """One typed row per key, its columns filled by `make(row, item_key, value)`, in id order."""
    out: dict[Any, Any] = {}
    for pk, participant, source, text, control, phase, item_key, value, time, created, updated in rows:
        key = key_of(participant, source, text, control, phase, item_key)
        if key is None:
            continue
        typed = out.get(key)
        if typed is None:
            typed = out[key] = make(pk, participant, source, text, control, phase)
            typed.created_at, typed.updated_at = created, updated
        else:
            typed.id = min(typed.id, pk)
            typed.created_at = min(typed.created_at, created)
            typed.updated_at = max(typed.updated_at, updated)
        typed.time_spent_ms += time
        _fill(typed, item_key, value)
    return sorted(out.values(), key=lambda r: r.id)


def _fill(typed, item_key: str, value: Any) -> None:
    if isinstance(typed, ControlAnswerRow):
        if item_key in scales.EXPERT_ASPECTS:
            typed.scores[item_key] = value
        elif item_key == "comment":
            typed.comment = value
        else:
            typed.added[item_key] = value
        return
    preset = RADIOLOGIST_PRESET if isinstance(typed, (RatingRow, JudgementRow)) else LAYPERSON_PRESET
    binding = PROTOCOL_BINDINGS[preset][item_key]
    setattr(typed, binding.column, binding.column_of(value))


_RATING_KEYS = frozenset(SHAPE_ITEMS[RATING].values())
_JUDGEMENT_KEYS = frozenset(SHAPE_ITEMS[JUDGEMENT].values())
_LAY_KEYS = frozenset(SHAPE_ITEMS[LAY].values())
_PREFERENCE_KEYS = frozenset(SHAPE_ITEMS[PREFERENCE].values())


def protocol_answers(path: str = "") -> Q:
    """A Q over ItemAnswer (through `path`) for the answers to the protocol's own items (the typed
    shapes' answers), planted controls' rows excluded."""
    return Q(
        **{
            f"{path}instrument__key": RADIOLOGIST_PRESET,
            f"{path}item_key__in": sorted(_RATING_KEYS | _JUDGEMENT_KEYS),
        }
    ) | Q(
        **{
            f"{path}instrument__key": LAYPERSON_PRESET,
            f"{path}item_key__in": sorted(_LAY_KEYS | _PREFERENCE_KEYS),
        }
    )


# --- The typed shapes as querysets -------------------------------------------------------------------
#
# Each shape is one GROUP BY over the protocol's item answers (a pivot: one column per item), so
# that what reads whole tables (the analysis frames, the exports, the COPY export) keeps reading
# one query in SQL. Annotation names avoid the model's own field names.


class JSONText(Func):
    """The text of a JSON string value (NULL for anything else on SQLite, its text on PostgreSQL)."""

    output_field = TextField()

    def as_postgresql(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="(%(expressions)s #>> '{}')", **extra_context)

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(
            compiler, connection, template="json_extract(%(expressions)s, '$')", **extra_context
        )


def _one(item_key: str, then) -> Max:
    return Max(Case(When(item_key=item_key, then=then), default=Value(None), output_field=then.output_field))


def _int(item_key: str) -> Max:
    return _one(item_key, Cast("score", IntegerField()))


def _text(item_key: str) -> Coalesce:
    return Coalesce(_one(item_key, JSONText("value")), Value(""), output_field=TextField())


def _level(item_key: str, scale: scales.Scale) -> Coalesce:
    name = Case(
        *(When(score=float(level.value), then=Value(level.name)) for level in scale.levels),
        default=Value(None),
        output_field=CharField(),
    )
    return Coalesce(_one(item_key, name), Value(""), output_field=CharField())


def _json_text(item_key: str) -> Max:
    return _one(item_key, Cast("value", TextField()))


def _superseded() -> Exists:
    """An answer to the same item and target given later under another version of the instrument."""
    return Exists(
        ItemAnswer.objects.filter(
            participant_id=OuterRef("participant_id"),
            item_key=OuterRef("item_key"),
            source_id=OuterRef("source_id"),
            phase=OuterRef("phase"),
            control__isnull=True,
            updated_at__gt=OuterRef("updated_at"),
        )
        # An item is about the source or about a text, never both: null matches null.
        .filter(Q(shown_text_id=OuterRef("shown_text_id")) | Q(shown_text__isnull=True))
        .exclude(instrument_id=OuterRef("instrument_id"))
    )


def _of_shape(preset: str, keys, study, where: Q | None, narrow: Q) -> QuerySet[ItemAnswer]:
    rows = ItemAnswer.objects.filter(
        narrow, instrument__key=preset, item_key__in=sorted(keys), control__isnull=True
    )
    if study is not None:
        rows = rows.filter(participant__study=study)
    if where is not None:
        rows = rows.filter(where)
    # No query of its own: an answer given again under a later version replaces it in the SQL.
    return rows.filter(~_superseded()).order_by()


_TIMES = {
    "row_id": Min("pk"),
    "spent": Sum("time_spent_ms"),
    "first_at": Min("created_at"),
    "last_at": Max("updated_at"),
}


def rating_rows(*, study: Study | int | None = None, where: Q | None = None) -> QuerySet:
    """Radiologists' ratings, one row per (participant_id, shown_text_id) with `text_source_id`,
    `source_position`, the five aspects (1-5 or None), `comment` ("" when none) and row_id,
    spent, first_at, last_at; unordered."""
    return (
        _of_shape(RADIOLOGIST_PRESET, _RATING_KEYS, study, where, Q(shown_text__isnull=False))
        .values("participant_id", "shown_text_id")
        .annotate(
            text_source_id=Min("source_id"),
            source_position=Min("source__position"),
            **{aspect: _int(aspect) for aspect in scales.EXPERT_ASPECTS},
            comment=_text("comment"),
            **_TIMES,
        )
    )


def judgement_rows(*, study: Study | int | None = None, where: Q | None = None) -> QuerySet:
    """Radiologists' judgements of originals, one row per (participant_id, source_id) with
    `source_position`, `severity` (level name, "" when none), `simplicity`, `comment` and the
    times; unordered."""
    items = SHAPE_ITEMS[JUDGEMENT]
    return (
        _of_shape(RADIOLOGIST_PRESET, _JUDGEMENT_KEYS, study, where, Q(shown_text__isnull=True))
        .values("participant_id", "source_id")
        .annotate(
            source_position=Min("source__position"),
            severity=_level(items["severity"], scales.SEVERITY),
            simplicity=_int(items["simplicity"]),
            comment=_text(items["comment"]),
            **_TIMES,
        )
    )


def _lay_item(column: str) -> Subquery:
    return Subquery(
        LayItem.objects.filter(
            participant_id=OuterRef("participant_id"), source_id=OuterRef("source_id")
        ).values(column)[:1]
    )


def lay_answer_rows(*, study: Study | int | None = None, where: Q | None = None) -> QuerySet:
    """Lay panels 1 and 2, one row per (participant_id, source_id, phase) with the participant's
    lay item (`item_id`, `item_position`, `item_text_id`, `item_system_id`), the five questions by
    level name ("" when not answered) and the times; unordered."""
    return (
        _of_shape(LAYPERSON_PRESET, _LAY_KEYS, study, where, Q(phase__in=["original", "assisted"]))
        .values("participant_id", "source_id", "phase")
        .annotate(
            **{q: _level(q, scales.LAY_SCALES[q]) for q in scales.LAY_QUESTIONS},
            **_TIMES,
        )
        .annotate(
            item_id=_lay_item("pk"),
            item_position=_lay_item("position"),
            item_text_id=_lay_item("shown_text_id"),
            item_system_id=_lay_item("assigned_system_id"),
        )
    )


def preference_rows(*, study: Study | int | None = None, where: Q | None = None) -> QuerySet:
    """Lay panel 3, one row per (participant_id, source_id) with the lay item's columns (as
    lay_answer_rows), `most` / `least` (the JSON text of the chosen text ids, None when none),
    the justifications ("" when none) and the times; unordered."""
    return (
        _of_shape(LAYPERSON_PRESET, _PREFERENCE_KEYS, study, where, Q(phase=ItemAnswer.Phase.PREFERENCE))
        .values("participant_id", "source_id")
        .annotate(
            most=_json_text("most"),
            least=_json_text("least"),
            most_justification=_text("most_justification"),
            least_justification=_text("least_justification"),
            **_TIMES,
        )
        .annotate(
            item_id=_lay_item("pk"),
            item_position=_lay_item("position"),
            item_system_id=_lay_item("assigned_system_id"),
            item_order=_lay_item("preference_order"),
        )
    )


def _chosen(stored: str | None) -> frozenset[int]:
    return frozenset(int(t) for t in json.loads(stored)) if stored else frozenset()


def _times(row: dict) -> dict[str, Any]:
    return {
        "id": row["row_id"],
        "time_spent_ms": row["spent"] or 0,
        "created_at": row["first_at"],
        "updated_at": row["last_at"],
    }


def expert_ratings(*, study: Study | int | None = None, where: Q | None = None) -> list[RatingRow]:
    """Radiologists' ratings of shown texts, one per (participant, text), in id order."""
    return [
        RatingRow(
            participant_id=r["participant_id"],
            source_id=r["text_source_id"],
            shown_text_id=r["shown_text_id"],
            comment=r["comment"],
            **{a: r[a] for a in scales.EXPERT_ASPECTS},
            **_times(r),
        )
        for r in rating_rows(study=study, where=where).order_by("row_id")
    ]


def expert_judgements(*, study: Study | int | None = None, where: Q | None = None) -> list[JudgementRow]:
    """Radiologists' judgements of originals, one per (participant, source), in id order."""
    return [
        JudgementRow(
            participant_id=r["participant_id"],
            source_id=r["source_id"],
            severity=r["severity"],
            simplicity=r["simplicity"],
            comment=r["comment"],
            **_times(r),
        )
        for r in judgement_rows(study=study, where=where).order_by("row_id")
    ]


def lay_answers(*, study: Study | int | None = None, where: Q | None = None) -> list[LayAnswerRow]:
    """Lay panels 1 and 2, one per (participant, source, phase), in id order; `item_id` is the
    participant's LayItem of the source."""
    return [
        LayAnswerRow(
            participant_id=r["participant_id"],
            source_id=r["source_id"],
            phase=r["phase"],
            item_id=r["item_id"],
            **{q: r[q] for q in scales.LAY_QUESTIONS},
            **_times(r),
        )
        for r in lay_answer_rows(study=study, where=where).order_by("row_id")
    ]


def lay_preferences(*, study: Study | int | None = None, where: Q | None = None) -> list[PreferenceRow]:
    """Lay panel 3, one per (participant, source), in id order."""
    return [
        PreferenceRow(
            participant_id=r["participant_id"],
            source_id=r["source_id"],
            item_id=r["item_id"],
            most=_chosen(r["most"]),
            least=_chosen(r["least"]),
            most_justification=r["most_justification"],
            least_justification=r["least_justification"],
            order_shown=list(r["item_order"] or []),
            **_times(r),
        )
        for r in preference_rows(study=study, where=where).order_by("row_id")
    ]


def control_answers(*, study: Study | int | None = None, where: Q | None = None) -> list[ControlAnswerRow]:
    """Radiologists' answers on planted controls, one per (participant, control), in id order."""
    rows = ItemAnswer.objects.filter(control__isnull=False)
    if study is not None:
        rows = rows.filter(participant__study=study)
    if where is not None:
        rows = rows.filter(where)
    return _grouped(
        rows.order_by("updated_at", "pk").values_list(*_COLUMNS),
        lambda p, s, t, c, ph, k: (p, c),
        lambda pk, p, s, t, c, ph: ControlAnswerRow(id=pk, participant_id=p, source_id=s, control_id=c),
    )


def rows_of_page(rows: Iterable[ItemAnswer], *, participant_id: int) -> Iterator[Any]:
    """The typed rows of one participant's item answers already read (a survey page reads its
    target's rows once): ratings by text, the judgement, control answers. Yields typed rows."""
    ratings: dict[int, RatingRow] = {}
    judgement: JudgementRow | None = None
    controls: dict[int, ControlAnswerRow] = {}
    for row in sorted(rows, key=lambda r: (r.updated_at, r.pk)):
        typed: Any
        if row.control_id is not None:
            typed = controls.get(row.control_id)
            if typed is None:
                typed = controls[row.control_id] = ControlAnswerRow(
                    id=row.pk,
                    participant_id=participant_id,
                    source_id=row.source_id,
                    control_id=row.control_id,
                )
        elif row.item_key in _RATING_KEYS and row.shown_text_id is not None:
            typed = ratings.get(row.shown_text_id)
            if typed is None:
                typed = ratings[row.shown_text_id] = RatingRow(
                    id=row.pk,
                    participant_id=participant_id,
                    source_id=row.source_id,
                    shown_text_id=row.shown_text_id,
                )
        elif row.item_key in _JUDGEMENT_KEYS and row.shown_text_id is None:
            if judgement is None:
                judgement = JudgementRow(id=row.pk, participant_id=participant_id, source_id=row.source_id)
            typed = judgement
        else:
            continue
        typed.id = min(typed.id, row.pk)
        typed.time_spent_ms += row.time_spent_ms
        typed.updated_at = max(typed.updated_at or row.updated_at, row.updated_at)
        typed.created_at = min(typed.created_at or row.created_at, row.created_at)
        _fill(typed, row.item_key, row.value)
    yield from ratings.values()
    if judgement is not None:
        yield judgement
    yield from controls.values()


def low_rated_texts(
    *, study: Study, aspects: Iterable[str], threshold: int, where: Q | None = None, among=None
) -> set[int]:
    """The shown texts some radiologist's latest rating puts at or below `threshold` on one of
    `aspects` (the safety gate's question), in one query; `among` narrows it to a few texts."""
    rows = ItemAnswer.objects.filter(
        participant__study=study,
        instrument__key=RADIOLOGIST_PRESET,
        item_key__in=list(aspects),
        shown_text__isnull=False,
        control__isnull=True,
        score__lte=threshold,
    )
    if where is not None:
        rows = rows.filter(where)
    if among is not None:
        rows = rows.filter(shown_text_id__in=list(among))
    # An answer given again under a later version of the instrument replaces it.
    newer = ItemAnswer.objects.filter(
        participant_id=OuterRef("participant_id"),
        item_key=OuterRef("item_key"),
        shown_text_id=OuterRef("shown_text_id"),
        control__isnull=True,
        updated_at__gt=OuterRef("updated_at"),
    ).exclude(instrument_id=OuterRef("instrument_id"))
    return set(rows.filter(~Exists(newer)).values_list("shown_text_id", flat=True).distinct())


def answered_text_ids(text_ids: Iterable[int]) -> set[int]:
    """The texts among `text_ids` some answer is about: as the shown or the reference text, or
    chosen in a lay panel 3 (a text an answer names is never deleted)."""
    ids = set(text_ids)
    if not ids:
        return set()
    about = set(
        ItemAnswer.objects.filter(shown_text_id__in=ids).values_list("shown_text_id", flat=True).distinct()
    )
    about |= set(
        ItemAnswer.objects.filter(reference_text_id__in=ids)
        .values_list("reference_text_id", flat=True)
        .distinct()
    )
    sources = SimplificationText.objects.filter(pk__in=ids - about).values_list("source_id", flat=True)
    chosen = ItemAnswer.objects.filter(
        source_id__in=sources, item_key__in=["most", "least"], phase=ItemAnswer.Phase.PREFERENCE
    ).values_list("value", flat=True)
    for value in chosen:
        about |= {int(t) for t in value if str(t).isdigit()} & ids
    return about


def typed_answer_coverage(*, study: Study, where: Q | None = None) -> dict[str, tuple[int, Any]]:
    """{shape: (how many typed rows, the last change)} of the protocol's answers, one aggregate
    each and no row read: "lay_answers", "lay_preferences", "expert_ratings", "expert_judgements"."""
    text = CharField()
    shapes = {
        "lay_answers": (
            LAYPERSON_PRESET,
            _LAY_KEYS,
            Q(phase__in=["original", "assisted"]),
            (Cast("participant_id", text), Value(":"), Cast("source_id", text), Value(":"), "phase"),
        ),
        "lay_preferences": (
            LAYPERSON_PRESET,
            _PREFERENCE_KEYS,
            Q(),
            (Cast("participant_id", text), Value(":"), Cast("source_id", text)),
        ),
        "expert_ratings": (
            RADIOLOGIST_PRESET,
            _RATING_KEYS,
            Q(shown_text__isnull=False),
            (Cast("participant_id", text), Value(":"), Cast("shown_text_id", text)),
        ),
        "expert_judgements": (
            RADIOLOGIST_PRESET,
            _JUDGEMENT_KEYS,
            Q(shown_text__isnull=True),
            (Cast("participant_id", text), Value(":"), Cast("source_id", text)),
        ),
    }
    out = {}
    for name, (preset, keys, narrow, parts) in shapes.items():
        rows = ItemAnswer.objects.filter(
            narrow,
            participant__study=study,
            instrument__key=preset,
            item_key__in=sorted(keys),
            control__isnull=True,
        )
        if where is not None:
            rows = rows.filter(where)
        found = rows.aggregate(
            n=Count(Concat(*parts, output_field=text), distinct=True), last=Max("updated_at")
        )
        out[name] = (found["n"], found["last"])
    return out


def lay_answered_sources(*, study: Study, item_key: str, phase: str) -> set[tuple[int, int]]:
    """(participant id, source id) of the counted laypeople who answered the protocol's lay item
    `item_key` in `phase` (e.g. Q4 in panel 2: the Latin-square balance's answered cells)."""
    from annotation.selectors import counted_participants

    return set(
        ItemAnswer.objects.filter(
            counted_participants(path="participant__"),
            participant__study=study,
            instrument__key=LAYPERSON_PRESET,
            item_key=item_key,
            phase=phase,
            control__isnull=True,
        )
        .values_list("participant_id", "source_id")
        .distinct()
    )
