"""Planted controls on a radiologist's pages: where they join a page, how a page reads
them, and where their answers go.

A control (annotation.models.PlantedControl, planted by generation/services/controls.py) joins the
page of its source when the page is created, at a row index drawn from the participant's seed, and
is then a row like any other: its blind label runs in the page's A, B, C… sequence, it asks the same
questions, and it counts towards the page's completion. Only its answers' target differs: they are
ItemAnswer rows about the control (`control` set, no shown text), which no table of the study reads.

Inside a page build a control row stands in as a SimplificationText whose pk is the control's id
negated (`row_key`): pages.py keys its rows by text id, and a negative id can be no text's. The key
never reaches the HTML, whose fields are named by the blind labels alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q

from annotation import scales
from annotation.answer_selectors import ControlAnswerRow, RatingRow, control_answers
from annotation.answer_store import CLEAR, Target, answers_upsert, flow_instrument_id, target_answers
from annotation.answer_writes import expert_scores_clean, free_text_clean, role_require
from annotation.instrument_binding import item_value_to_json
from annotation.instrument_services import error_marks_decode
from annotation.item_questions import item_refusal
from annotation.models import ExpertItem, Participant, PlantedControl, StudyInstrument
from instruments.answers import InvalidAnswer, item_value_code, item_value_validate
from instruments.schema import Item, ItemKind
from surveys.survey_page import seeded_shuffle

_REAL = 0  # a real row in the shuffle below (control ids are positive)


def control_slots(
    *, participant: Participant, source_id: int, n_real: int, control_ids: Sequence[int]
) -> list:
    """[[row index, control id], …]: where the source's controls sit among its `n_real` real rows on
    this participant's page. Drawn from the participant's seed, so the same participant always gets
    the same places and different radiologists get different ones."""
    merged = seeded_shuffle(
        [_REAL] * n_real + sorted(control_ids), seed=participant.order_seed, purpose=f"controls:{source_id}"
    )
    return [[index, row] for index, row in enumerate(merged) if row != _REAL]


def source_controls(source_ids: Iterable[int]) -> dict[int, list[int]]:
    """The planted controls of each source, by source id (one query)."""
    out: dict[int, list[int]] = {}
    rows = PlantedControl.objects.filter(degrades__source_id__in=list(source_ids)).order_by("pk")
    for control_id, source_id in rows.values_list("pk", "degrades__source_id"):
        out.setdefault(source_id, []).append(control_id)
    return out


def row_key(control_id: int) -> int:
    return -control_id


def is_planted(text_id: int) -> bool:
    return text_id < 0


def merged_order(item: ExpertItem) -> list[int]:
    """The page's row keys in display order: the real texts' ids with the controls' keys inserted
    at their slots."""
    order = list(item.text_order)
    for index, control_id in sorted(item.control_slots or ()):
        order.insert(min(index, len(order)), row_key(control_id))
    return order


def page_controls_of(item: ExpertItem) -> dict[int, PlantedControl]:
    """The page's controls by row key (no query for a page without controls)."""
    ids = [control_id for _, control_id in item.control_slots or ()]
    if not ids:
        return {}
    # Only controls of the page's own source: ids in a page's JSON are not foreign keys (a page
    # brought from another server by a study archive names controls that are not this study's).
    of_page = PlantedControl.objects.filter(pk__in=ids, degrades__source_id=item.source_id)
    return {row_key(c.pk): c for c in of_page}


def answer_as_rating(answer: ControlAnswerRow, key: int) -> RatingRow:
    """A rating holding a control answer's scores, so the page shows the row as it shows a real one."""
    scores: dict[str, Any] = {aspect: answer.scores.get(aspect) for aspect in scales.EXPERT_ASPECTS}
    return RatingRow(
        id=answer.id,
        participant_id=answer.participant_id,
        source_id=answer.source_id,
        shown_text_id=key,
        comment=answer.comment,
        **scores,
    )


def _added_clean(item: Item, raw: object, text: str) -> tuple[Any, float | None]:
    """An added item's answer as ItemAnswer stores it (item_value_to_json, and its score),
    checked as instruments.answers checks every answer; error spans against the control's own
    text."""
    if item.kind is ItemKind.ERROR_SPANS and isinstance(raw, str):
        raw = error_marks_decode(item, raw)  # as on a real row: the same limits and refusals
    try:
        value = item_value_validate(item, raw, text_length=len(text))
        code = item_value_code(item, value)
    except InvalidAnswer as exc:
        # Worded as a real row's refusal, in the participant's language (the row must not tell).
        raise ValidationError({item.key: [f"{item.key}: {item_refusal(exc)}"]}) from None
    return item_value_to_json(value), code if isinstance(code, float) else None


def control_answer_save(
    *,
    participant: Participant,
    control: PlantedControl,
    scores: Mapping[str, Any] | None = None,
    comment: str | None = None,
    added: Sequence[tuple[Item, Any]] = (),
    time_spent_ms: int = 0,
) -> ControlAnswerRow:
    """Save (part of) a radiologist's answers on a control's row, with the refusals of a real row
    (expert_rating_save, item_answer_save): unknown aspects, values outside 1-5, a control of another
    study, an answer an added item cannot take (`added`: (item, raw answer) pairs). An empty added
    answer clears a free text, is "no error marked" ([]) for an error-span item (the widget posts
    [] for a row left unmarked) and is ignored otherwise; a rating is never cleared. Stored as
    every answer is (annotation/answer_store.py), under the study's radiologist instrument, with
    the control as the target."""
    role_require(participant, Participant.Role.RADIOLOGIST)
    if control.study_id != participant.study_id:
        raise ValidationError("This simplification belongs to another study.")
    # Empty values are "not given" here as on a real row (pages.py drops them before either save).
    clean = expert_scores_clean({k: v for k, v in (scores or {}).items() if v != ""})
    values: dict[str, Any] = {aspect: (value, float(value)) for aspect, value in clean.items()}
    for item, raw in added:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if item.kind is ItemKind.FREE_TEXT:
                values[item.key] = CLEAR
            continue
        value, score = _added_clean(item, raw, control.text)
        if value is None:
            # An empty answer: "no error marked" is stored as a real row stores it ([]); any other
            # item's empty answer is "not given", never a stored null.
            if item.kind is ItemKind.ERROR_SPANS:
                values[item.key] = ([], 0.0)
            continue
        values[item.key] = (value, score)
    if comment is not None:
        comment = free_text_clean("comment", comment)
        values["comment"] = (comment, None) if comment else CLEAR
    instrument_id = flow_instrument_id(study=participant.study, flow=StudyInstrument.Flow.EXPERT)
    target = Target(source_id=control.degrades.source_id, control_id=control.pk)
    current = target_answers(
        participant_id=participant.pk, instrument_id=instrument_id, target=target, item_keys=values
    )
    answers_upsert(
        participant=participant,
        instrument_id=instrument_id,
        target=target,
        values=values,
        time_spent_ms=time_spent_ms,
        current=current,
    )
    found = control_answers(where=Q(participant_id=participant.pk, control_id=control.pk))
    return (
        found[0]
        if found
        else ControlAnswerRow(
            id=0, participant_id=participant.pk, source_id=control.degrades.source_id, control_id=control.pk
        )
    )


def control_of(key: int, item: ExpertItem) -> PlantedControl:
    """The control behind a page's row key, locked for its answer's write; only one of the page's."""
    control_id = -key
    if control_id not in {c for _, c in item.control_slots or ()}:
        raise ValidationError("There is no such simplification on this page.")
    control = (
        PlantedControl.objects.filter(pk=control_id, degrades__source_id=item.source_id)
        .select_related("degrades")
        .first()
    )
    if control is None:
        raise ValidationError("There is no such simplification on this page.")
    return control
