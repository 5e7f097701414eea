"""Writes of the radiologist flow's answers: ratings of each text, judgements of the original,
and the pages (ExpertItem) a radiologist is given. Each answer service is idempotent (answering
twice updates the one row), validates its values and adds the time spent to the row's total."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation import scales
from annotation.expert import controls as expert_controls
from annotation.importers.bulk_insert import rows_insert
from annotation.models import (
    ExpertItem,
    ExpertRating,
    ExpertSourceJudgement,
    Participant,
    Simplification,
    SimplificationText,
    Source,
)
from annotation.survey_page import seeded_shuffle

if TYPE_CHECKING:
    pass


from annotation.answer_writes import (
    UNREAD,
    answer_save_locked,
    answer_write,
    expert_scores_clean,
    free_text_clean,
    level_clean,
    likert_clean,
    role_require,
)


def _expert_answer_save(model, lookup: dict[str, Any], current, fields: dict[str, Any], time_spent_ms: int):
    # A caller that read the row under its page lock passes it as `current`: one write.
    if current is not UNREAD:
        return answer_write(model, lookup, current, fields, time_spent_ms)
    # No savepoint: the values are checked before, so what can fail inside is the database, and
    # that must abort the caller's whole transaction anyway.
    with transaction.atomic(savepoint=False):
        return answer_save_locked(model, lookup, fields, time_spent_ms)


def expert_rating_save(
    *,
    participant: Participant,
    shown_text: SimplificationText,
    scores: Mapping[str, Any] | None = None,
    comment: str | None = None,
    time_spent_ms: int = 0,
    current: ExpertRating | None | object = UNREAD,
) -> ExpertRating:
    """Save (part of) a radiologist's rating of one distinct text. Unknown aspects, values outside
    1-5 and texts of another study are refused. `current` is the row as the caller read it under a
    lock that serialises writers of this row (None: there is none yet); with it the save is one
    UPDATE or one INSERT instead of a locked read, a savepoint and a write."""
    role_require(participant, Participant.Role.RADIOLOGIST)
    if shown_text.source.study_id != participant.study_id:
        raise ValidationError("This simplification belongs to another study.")
    clean = expert_scores_clean(scores)
    if comment is not None:
        comment = free_text_clean("comment", comment)
    fields: dict[str, Any] = dict(clean)
    if comment is not None:
        fields["comment"] = comment
    lookup = {"participant": participant, "shown_text": shown_text}
    return _expert_answer_save(ExpertRating, lookup, current, fields, time_spent_ms)


def expert_source_judgement_save(
    *,
    participant: Participant,
    source: Source,
    severity: str | None = None,
    simplicity: Any = None,
    comment: str | None = None,
    time_spent_ms: int = 0,
    current: ExpertSourceJudgement | None | object = UNREAD,
) -> ExpertSourceJudgement:
    """Save (part of) a radiologist's judgement of an original sentence; `current` as for
    expert_rating_save."""
    role_require(participant, Participant.Role.RADIOLOGIST)
    if source.study_id != participant.study_id:
        raise ValidationError("This source belongs to another study.")
    if severity is not None:
        level_clean("severity", severity, scales.SEVERITY)
    simplicity_value = likert_clean("simplicity", simplicity) if simplicity is not None else None
    if comment is not None:
        comment = free_text_clean("comment", comment)
    fields: dict[str, Any] = {}
    if severity is not None:
        fields["severity"] = severity
    if simplicity_value is not None:
        fields["simplicity"] = simplicity_value
    if comment is not None:
        fields["comment"] = comment
    lookup = {"participant": participant, "source": source}
    return _expert_answer_save(ExpertSourceJudgement, lookup, current, fields, time_spent_ms)


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
    # The study's planted controls join the pages of their sources (annotation/expert/controls.py).
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
