"""The one write path of every answer: `answers_upsert` writes one target's item answers
(ItemAnswer rows) for every flow (the radiologist page and its planted controls, the lay panels,
the rate-each-pair and compare-two flows, the importers), with the one revision rule: a revision
(AnswerRevision, the earlier value) only when a value actually changed, never on the first save.

Idempotent: answering twice updates the one row of (participant, instrument version, item, target,
phase); a first save that loses an insert race to a concurrent one (double click, two tabs)
updates the winner's row; an answer sent again unchanged (an autosave sends the whole form)
writes nothing. The time spent goes to the first row the save writes (where it writes none, to
the first answer it was given), so the times of a target's answers add up to the time spent on
it. Values are checked by the callers (each flow knows its items: annotation/instrument_binding.py
for the protocol's, instrument_services for every other item); this module stores what it is given
as (value as item_value_to_json writes it, score as item_value_code codes it)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction
from django.db.models.constants import OnConflict
from django.utils import timezone

from annotation.models import AnswerRevision, ItemAnswer, Participant, Study, StudyInstrument
from annotation.prepared_queries import Joined, PreparedQuery

# A value meaning "the answer is withdrawn" (an emptied free text): its row goes.
CLEAR = object()


@dataclass(frozen=True)
class Target:
    """What an answer is about: the source, a shown text, a (shown text, reference) pair, or a
    planted control (with its source); `phase` is the lay panel ("" elsewhere)."""

    source_id: int
    shown_text_id: int | None = None
    reference_text_id: int | None = None
    control_id: int | None = None
    phase: str = ""

    def lookup(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "shown_text_id": self.shown_text_id,
            "reference_text_id": self.reference_text_id,
            "control_id": self.control_id,
            "phase": self.phase,
        }


def flow_instrument_id(*, study: Study, flow: str) -> int:
    """The id of the StudyInstrument row `flow`'s answers are stored under now: the current
    version; a study that has none yet gets the protocol presets attached (answers always name an
    instrument version)."""
    from annotation.instrument_selectors import study_instrument_current
    from annotation.instrument_services import study_instruments_attach

    current = study_instrument_current(study=study, flow=flow)
    if current.row_id is not None:
        return current.row_id
    with transaction.atomic():
        # Participants answering together attach the presets once: under the study's row lock,
        # the first attaches and the others find its rows.
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk", flat=True).first()
        if not StudyInstrument.objects.filter(study=study, flow=flow, is_current=True).exists():
            study_instruments_attach(study=study)
    row_id = (
        StudyInstrument.objects.filter(study=study, flow=flow, is_current=True)
        .values_list("pk", flat=True)
        .first()
    )
    if row_id is None:
        raise StudyInstrument.DoesNotExist(f"Study {study.slug} asks no {flow} instrument.")
    return row_id


_ANSWER = Joined(ItemAnswer)


def _target_rows_query(lock: bool) -> PreparedQuery:
    def build(participant_id, instrument_id, item_keys, **target):
        rows = ItemAnswer.objects.filter(
            participant_id=participant_id, instrument_id=instrument_id, item_key__in=item_keys, **target
        )
        return (rows.select_for_update() if lock else rows).values_list(*_ANSWER.columns())

    return PreparedQuery(build)


_target_rows = {lock: _target_rows_query(lock) for lock in (False, True)}


def target_answers(
    *, participant_id: int, instrument_id: int, target: Target, item_keys, lock: bool = True
) -> dict[str, ItemAnswer]:
    """The stored answers of `item_keys` on `target`, by item key (locked for the caller's write)."""
    keys = tuple(item_keys)
    if not keys:
        return {}
    rows = _target_rows[lock].rows(
        participant_id=participant_id, instrument_id=instrument_id, item_keys=keys, **target.lookup()
    )
    answers: list[Any] = [_ANSWER.instances(row) for row in rows]
    return {answer.item_key: answer for answer in answers}


@dataclass(frozen=True)
class Write:
    """One target's answers to write (`answers_upsert`'s arguments of one target)."""

    target: Target
    values: Mapping[str, Any]
    current: Mapping[str, ItemAnswer] | None = None
    time_spent_ms: int = 0
    suggestions: Mapping[str, dict] | None = None


def answers_upsert(
    *,
    participant: Participant | int,
    instrument_id: int,
    target: Target,
    values: Mapping[str, Any],
    language: str = "",
    time_spent_ms: int = 0,
    suggestions: Mapping[str, dict] | None = None,
    current: Mapping[str, ItemAnswer] | None = None,
) -> dict[str, ItemAnswer]:
    """Write `values` ({item key: (value, score)} or CLEAR) of one target; returns the rows as
    written, by item key (a cleared key is absent). `current`: the target's rows as the caller
    read them under a lock that serialises this target's writers (then they are not read again).
    Call inside a transaction (one is opened otherwise)."""
    (out,) = answers_upsert_targets(
        participant=participant,
        instrument_id=instrument_id,
        writes=[Write(target, values, current, time_spent_ms, suggestions)],
        language=language,
    )
    return out


def answers_upsert_targets(
    *, participant: Participant | int, instrument_id: int, writes: Sequence[Write], language: str = ""
) -> list[dict[str, ItemAnswer]]:
    """`answers_upsert` of each of `writes` (several targets of one participant and instrument
    version, e.g. a lay panel's questions about the sentence and about the text), with the new
    rows of all of them in one INSERT; returns each write's rows as written."""
    participant_id = participant if isinstance(participant, int) else participant.pk
    now = timezone.now()
    outs: list[dict[str, ItemAnswer]] = [{} for _ in writes]
    with transaction.atomic(savepoint=False):
        added = [max(0, int(write.time_spent_ms)) for write in writes]
        read: list[dict[str, ItemAnswer]] = []
        unchanged: list[list[ItemAnswer]] = []
        new: list[tuple[int, str, Any, Any, dict]] = []  # (write, key, value, score, extra)
        for n, write in enumerate(writes):
            rows = (
                dict(write.current)
                if write.current is not None
                else target_answers(
                    participant_id=participant_id,
                    instrument_id=instrument_id,
                    target=write.target,
                    item_keys=write.values,
                )
            )
            read.append(rows)
            unchanged.append([])
            for key, given in write.values.items():
                row = rows.get(key)
                if given is CLEAR:
                    if row is not None:
                        _revision(row, None, now)
                        ItemAnswer.objects.filter(pk=row.pk).delete()
                    continue
                value, score = given
                suggestions = write.suggestions
                extra = {"suggestions": suggestions[key]} if suggestions and key in suggestions else {}
                if row is None:
                    new.append((n, key, value, score, extra))
                elif row.value == value and row.score == score and not extra:
                    # The same answer again (an autosave sends the whole form): nothing to write.
                    unchanged[n].append(row)
                    outs[n][key] = row
                else:
                    outs[n][key] = _update(row, value, score, language, added[n], now, extra)
                    added[n] = 0
        if new:
            inserted = _insert(participant_id, instrument_id, writes, new, language, added)
            for n, key, value, score, extra in new:
                if (n, key) in inserted:
                    outs[n][key] = inserted[n, key]
                    added[n] = 0
                    continue
                # A row written meanwhile by another writer (outside the caller's lock): updated,
                # its time kept as that writer counted it.
                row = target_answers(
                    participant_id=participant_id,
                    instrument_id=instrument_id,
                    target=writes[n].target,
                    item_keys=[key],
                )[key]
                outs[n][key] = _update(row, value, score, language, 0, now, extra)
        for n, write in enumerate(writes):
            kept = unchanged[n] or [r for k, r in read[n].items() if write.values.get(k) is not CLEAR]
            if added[n] and kept:
                # No answer written to carry the time (the same answers again, or one withdrawn):
                # it goes to the target's first answer kept.
                row = kept[0]
                _update(row, row.value, row.score, "", added[n], now, {})
    return outs


# The columns an answer is inserted with, in the model's order (the primary key is the database's).
_INSERTED: tuple[Any, ...] = tuple(
    f for f in ItemAnswer._meta.concrete_fields if f is not ItemAnswer._meta.pk and not f.generated
)


@functools.cache
def _insert_sql(alias: str, n: int) -> str:
    """INSERT of `n` answers that leaves out a row another writer inserted first (no savepoint
    needed: a conflict never aborts the caller's transaction) and returns the id and item key of
    every row it wrote (with its target's columns). Written once per database and number of rows."""
    connection = connections[alias]
    ops: Any = connection.ops
    opts: Any = ItemAnswer._meta
    row = "(" + ", ".join(["%s"] * len(_INSERTED)) + ")"
    returning, _ = ops.return_insert_columns(
        [opts.pk, opts.get_field("item_key"), *(opts.get_field(name) for name in _TARGET_COLUMNS)]
    )
    return " ".join(
        part
        for part in (
            ops.insert_statement(on_conflict=OnConflict.IGNORE),
            ops.quote_name(opts.db_table),
            "(" + ", ".join(ops.quote_name(f.column) for f in _INSERTED) + ")",
            "VALUES " + ", ".join([row] * n),
            ops.on_conflict_suffix_sql(_INSERTED, OnConflict.IGNORE, None, None),
            returning,
        )
        if part
    )


def _insert(participant_id, instrument_id, writes, new, language, added) -> dict[tuple[int, str], ItemAnswer]:
    """The new rows of `new` ((write, item key, value, score, extra) each; a write's time on its
    first new row), by (write, item key), in one INSERT … ON CONFLICT DO NOTHING RETURNING: a
    row a concurrent first save inserted first is left out (the caller updates it). The SQL is
    written once (`_insert_sql`) and the values adapted as the ORM adapts them."""
    now = timezone.now()
    first: set[int] = set()
    rows = []
    for n, key, value, score, extra in new:
        rows.append(
            ItemAnswer(
                participant_id=participant_id,
                instrument_id=instrument_id,
                item_key=key,
                **writes[n].target.lookup(),
                value=value,
                score=score,
                language=language,
                time_spent_ms=0 if n in first else added[n],
                created_at=now,
                updated_at=now,
                **extra,
            )
        )
        first.add(n)
    connection = transaction.get_connection()
    params = [f.get_db_prep_save(getattr(row, f.attname), connection) for row in rows for f in _INSERTED]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(connection.alias, len(rows)), params)
        returned = cursor.fetchall()
    by_target = {(row.item_key, *_target_of(row)): (n, row) for (n, *_), row in zip(new, rows, strict=True)}
    inserted = {}
    for pk, key, *target in returned:
        n, row = by_target[(key, *target)]
        row.pk = pk
        row._state.adding = False
        inserted[n, key] = row
    return inserted


_TARGET_COLUMNS = ("source_id", "shown_text_id", "reference_text_id", "control_id", "phase")


def _target_of(row: ItemAnswer) -> tuple:
    return tuple(getattr(row, name) for name in _TARGET_COLUMNS)


@functools.cache
def _update_sql(alias: str) -> str:
    """One UPDATE for every change of an answer: its value and score (the same again where they
    did not change), its language (kept where none is given), its suggestions (kept where none
    are given), the time added, the time of the change."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    opts: Any = ItemAnswer._meta
    column = {name: quote(opts.get_field(name).column) for name in _UPDATED}
    return (
        f"UPDATE {quote(ItemAnswer._meta.db_table)} SET {column['value']} = %s, {column['score']} = %s, "
        f"{column['language']} = CASE WHEN %s = '' THEN {column['language']} ELSE %s END, "
        f"{column['suggestions']} = COALESCE(%s, {column['suggestions']}), "
        f"{column['time_spent_ms']} = {column['time_spent_ms']} + %s, {column['updated_at']} = %s "
        f"WHERE {quote(opts.pk.column)} = %s"
    )


_UPDATED = ("value", "score", "language", "suggestions", "time_spent_ms", "updated_at")


def _update(row: ItemAnswer, value, score, language, added: int, now, extra) -> ItemAnswer:
    connection = transaction.get_connection()
    field: Any = ItemAnswer._meta.get_field
    suggestions = extra.get("suggestions")
    params = [
        field("value").get_db_prep_save(value, connection),
        score,
        language,
        language,
        None if suggestions is None else field("suggestions").get_db_prep_save(suggestions, connection),
        added,
        field("updated_at").get_db_prep_save(now, connection),
        row.pk,
    ]
    with connection.cursor() as cursor:
        cursor.execute(_update_sql(connection.alias), params)
    _revision(row, value, now)
    row.updated_at = now
    if row.value != value or row.score != score:
        row.value, row.score = value, score
    if language:
        row.language = language
    if suggestions is not None:
        row.suggestions = suggestions
    row.time_spent_ms += added
    return row


def _revision(row: ItemAnswer, value: Any, now) -> None:
    """Keep the row's earlier value when this save changes it (one INSERT, only then)."""
    if row.value == value:
        return
    AnswerRevision.objects.create(
        participant_id=row.participant_id,
        answer_type=ItemAnswer._meta.label,
        answer_id=row.pk,
        previous={"value": row.value},
        previous_at=row.updated_at or now,
        revised_at=now,
    )
