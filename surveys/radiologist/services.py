"""Writes of the radiologist flow's answers: ratings of each text, judgements of the original
(the protocol's items, stored as every answer is by annotation/answer_store.py), and the pages
(ExpertItem) a radiologist is given. Each answer service is idempotent (answering twice updates the
one row of each item), validates its values and adds the time spent to the target's total."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation import scales
from annotation.answer_selectors import JudgementRow, RatingRow, rows_of_page
from annotation.answer_store import (
    CLEAR,
    Target,
    Write,
    answers_upsert_targets,
    flow_instrument_id,
    target_answers,
)
from annotation.answer_writes import (
    expert_scores_clean,
    free_text_clean,
    level_clean,
    likert_clean,
    role_require,
)
from annotation.bulk_insert import rows_insert
from annotation.instrument_binding import JUDGEMENT, RATING, SHAPE_ITEMS
from annotation.models import (
    ExpertItem,
    ItemAnswer,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    StudyInstrument,
)
from surveys.radiologist import controls as expert_controls
from surveys.survey_page import seeded_shuffle

_RATING_ITEMS = SHAPE_ITEMS[RATING]
_JUDGEMENT_ITEMS = SHAPE_ITEMS[JUDGEMENT]
EXPERT = StudyInstrument.Flow.EXPERT.value


def _protocol_write(
    target: Target,
    items: Mapping[str, str],
    columns: Mapping[str, Any],
    time_spent_ms: int,
    current: Mapping[str, ItemAnswer] | None,
) -> Write:
    """The write of the typed `columns` ({column: value or "" to clear a text}) as the protocol
    items `items` names (nothing written yet)."""
    values = {}
    for column, value in columns.items():
        binding_value = _coded(column, value)
        values[items[column]] = CLEAR if binding_value is None else binding_value
    return Write(target, values, current, time_spent_ms)


def protocol_writes_run(
    *, participant: Participant, writes: Sequence[Write], language: str
) -> list[dict[str, ItemAnswer]]:
    """Run the writes of one page's targets (expert_rating_write, expert_source_judgement_write) in
    one call of the store (their new answers in one INSERT); each target's rows after its write,
    by item key. A write whose `current` is None reads its target's rows first."""
    instrument_id = flow_instrument_id(study=participant.study, flow=EXPERT)
    with transaction.atomic(savepoint=False):
        writes = [
            write
            if write.current is not None
            else replace(
                write,
                current=target_answers(
                    participant_id=participant.pk,
                    instrument_id=instrument_id,
                    target=write.target,
                    item_keys=_PROTOCOL_KEYS,
                ),
            )
            for write in writes
        ]
        written = answers_upsert_targets(
            participant=participant, instrument_id=instrument_id, writes=writes, language=language
        )
    out = []
    for write, rows in zip(writes, written, strict=True):
        assert write.current is not None  # read above
        kept = {k: v for k, v in write.current.items() if k not in write.values}
        out.append({**kept, **rows})
    return out


_PROTOCOL_KEYS = (*_RATING_ITEMS.values(), *_JUDGEMENT_ITEMS.values())


def _coded(column: str, value: Any) -> tuple[Any, float | None] | None:
    if value is None or value == "":
        return None
    if column == "severity":
        code = scales.SEVERITY.value_of(value)
        assert code is not None  # checked by level_clean
        return code, float(code)
    if isinstance(value, int):
        return value, float(value)
    return value, None


def expert_rating_write(
    *,
    participant: Participant,
    shown_text: SimplificationText,
    scores: Mapping[str, Any] | None = None,
    comment: str | None = None,
    time_spent_ms: int = 0,
    current: Mapping[str, ItemAnswer] | None = None,
) -> Write:
    """A radiologist's rating of one distinct text, checked and ready to write (protocol_writes_run):
    the protocol's aspect items and its comment, ItemAnswer rows about the text. Unknown aspects,
    values outside 1-5 and texts of another study are refused (ValidationError); an emptied
    comment withdraws it. `current`: the text's rows as the caller read them under a lock that
    serialises their writers (then not read again)."""
    role_require(participant, Participant.Role.RADIOLOGIST)
    if shown_text.source.study_id != participant.study_id:
        raise ValidationError("This simplification belongs to another study.")
    fields: dict[str, Any] = dict(expert_scores_clean(scores))
    if comment is not None:
        fields["comment"] = free_text_clean("comment", comment)
    target = Target(source_id=shown_text.source_id, shown_text_id=shown_text.pk)
    return _protocol_write(target, _RATING_ITEMS, fields, time_spent_ms, current)


def rating_of(
    rows: Mapping[str, ItemAnswer], *, participant: Participant, shown_text_id: int, source_id: int
) -> RatingRow:
    """A text's rows after its write (protocol_writes_run) as the typed rating."""
    typed = next(iter(rows_of_page(rows.values(), participant_id=participant.pk)), None)
    if isinstance(typed, RatingRow):
        return typed
    return RatingRow(id=0, participant_id=participant.pk, source_id=source_id, shown_text_id=shown_text_id)


def judgement_of(rows: Mapping[str, ItemAnswer], *, participant: Participant, source_id: int) -> JudgementRow:
    """The original's rows after their write (protocol_writes_run) as the typed judgement."""
    typed = next(iter(rows_of_page(rows.values(), participant_id=participant.pk)), None)
    if isinstance(typed, JudgementRow):
        return typed
    return JudgementRow(id=0, participant_id=participant.pk, source_id=source_id)


def expert_rating_save(
    *,
    participant: Participant,
    shown_text: SimplificationText,
    scores: Mapping[str, Any] | None = None,
    comment: str | None = None,
    time_spent_ms: int = 0,
    current: Mapping[str, ItemAnswer] | None = None,
    language: str = "",
) -> RatingRow:
    """Save (part of) a radiologist's rating of one distinct text (expert_rating_write, written at
    once)."""
    write = expert_rating_write(
        participant=participant,
        shown_text=shown_text,
        scores=scores,
        comment=comment,
        time_spent_ms=time_spent_ms,
        current=current,
    )
    (rows,) = protocol_writes_run(participant=participant, writes=[write], language=language)
    return rating_of(
        rows, participant=participant, shown_text_id=shown_text.pk, source_id=shown_text.source_id
    )


def expert_source_judgement_write(
    *,
    participant: Participant,
    source: Source,
    severity: str | None = None,
    simplicity: Any = None,
    comment: str | None = None,
    time_spent_ms: int = 0,
    current: Mapping[str, ItemAnswer] | None = None,
) -> Write:
    """A radiologist's judgement of an original sentence (the protocol's severity, simplicity and
    comment items, ItemAnswer rows about the source), checked and ready to write; `current` as for
    expert_rating_write."""
    role_require(participant, Participant.Role.RADIOLOGIST)
    if source.study_id != participant.study_id:
        raise ValidationError("This source belongs to another study.")
    fields: dict[str, Any] = {}
    if severity is not None:
        fields["severity"] = level_clean("severity", severity, scales.SEVERITY)
    if simplicity is not None:
        fields["simplicity"] = likert_clean("simplicity", simplicity)
    if comment is not None:
        fields["comment"] = free_text_clean("comment", comment)
    return _protocol_write(Target(source_id=source.pk), _JUDGEMENT_ITEMS, fields, time_spent_ms, current)


def expert_source_judgement_save(
    *,
    participant: Participant,
    source: Source,
    severity: str | None = None,
    simplicity: Any = None,
    comment: str | None = None,
    time_spent_ms: int = 0,
    current: Mapping[str, ItemAnswer] | None = None,
    language: str = "",
) -> JudgementRow:
    """Save (part of) a radiologist's judgement of an original sentence
    (expert_source_judgement_write, written at once)."""
    write = expert_source_judgement_write(
        participant=participant,
        source=source,
        severity=severity,
        simplicity=simplicity,
        comment=comment,
        time_spent_ms=time_spent_ms,
        current=current,
    )
    (rows,) = protocol_writes_run(participant=participant, writes=[write], language=language)
    return judgement_of(rows, participant=participant, source_id=source.pk)


def _expert_text_order(participant: Participant, source_id: int, text_ids: Iterable[int]) -> list[int]:
    """A page's texts in a random order drawn from the participant's seed (labels A, B, … follow it)."""
    return seeded_shuffle(sorted(set(text_ids)), seed=participant.order_seed, purpose=str(source_id))


def expert_item_create(
    *, participant: Participant, source: Source, position: int, text_order: Sequence[int] | None = None
) -> ExpertItem:
    """The radiologist's page for `source`; its texts in a random order drawn from the
    participant's seed unless given."""
    role_require(participant, Participant.Role.RADIOLOGIST)
    if text_order is None:
        text_order = _expert_text_order(
            participant,
            source.pk,
            SimplificationText.objects.filter(source=source, simplifications__isnull=False).values_list(
                "pk", flat=True
            ),
        )
    controls = expert_controls.source_controls([source.pk]).get(source.pk, [])
    slots = expert_controls.control_slots(
        participant=participant, source_id=source.pk, n_real=len(text_order), control_ids=controls
    )
    item, _ = ExpertItem.objects.get_or_create(
        participant=participant,
        source=source,
        defaults={"position": position, "text_order": list(text_order), "control_slots": slots},
    )
    return item


def expert_items_create(
    *, participant: Participant, source_ids: Sequence[int], first_position: int
) -> list[int]:
    """Pages for `source_ids` at consecutive positions from `first_position`, in a constant
    number of queries whatever their number (a COPY on PostgreSQL); returns their ids in that
    order. Call inside a transaction holding the participant row lock (two first visits would
    otherwise race for the same positions)."""
    role_require(participant, Participant.Role.RADIOLOGIST)
    texts: dict[int, list[int]] = {}
    rows = (
        Simplification.objects.filter(source__in=list(source_ids))
        .order_by()
        .values_list("source_id", "shown_text_id")
        .distinct()
    )
    for source_id, text_id in rows:
        texts.setdefault(source_id, []).append(text_id)
    # The study's planted controls join the pages of their sources (surveys/radiologist/controls.py).
    controls = expert_controls.source_controls(source_ids)
    orders = {
        source_id: _expert_text_order(participant, source_id, texts.get(source_id, ()))
        for source_id in source_ids
    }
    return rows_insert(
        ExpertItem,
        columns=("source_id", "position", "text_order", "control_slots"),
        rows=[
            (
                source_id,
                first_position + offset,
                orders[source_id],
                expert_controls.control_slots(
                    participant=participant,
                    source_id=source_id,
                    n_real=len(orders[source_id]),
                    control_ids=controls.get(source_id, ()),
                ),
            )
            for offset, source_id in enumerate(source_ids)
        ],
        fixed={"participant_id": participant.pk},
    )
