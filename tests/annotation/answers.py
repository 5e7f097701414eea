"""The protocol's answers in their typed shapes, for tests to read what a flow stored (through
annotation/answer_selectors.py, as every consumer reads them)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotation import answer_selectors
from annotation.answer_selectors import ControlAnswerRow, JudgementRow, LayAnswerRow, PreferenceRow, RatingRow
from annotation.models import ItemAnswer


def _where(participant=None, study=None, **more) -> Q:
    where = Q(**more)
    if participant is not None:
        where &= Q(participant=participant)
    if study is not None:
        where &= Q(participant__study=study)
    return where


def _one(rows: list, what: str):
    if len(rows) != 1:
        raise AssertionError(f"{len(rows)} {what}, expected one")
    return rows[0]


def ratings(*, participant=None, study=None, shown_text=None) -> list[RatingRow]:
    more = {} if shown_text is None else {"shown_text_id": getattr(shown_text, "pk", shown_text)}
    return answer_selectors.expert_ratings(where=_where(participant, study, **more))


def rating(**filters) -> RatingRow:
    return _one(ratings(**filters), "ratings")


def judgements(*, participant=None, study=None, source=None) -> list[JudgementRow]:
    more = {} if source is None else {"source_id": getattr(source, "pk", source)}
    return answer_selectors.expert_judgements(where=_where(participant, study, **more))


def judgement(**filters) -> JudgementRow:
    return _one(judgements(**filters), "judgements")


def lay_answers(*, participant=None, study=None, item=None, phase=None) -> list[LayAnswerRow]:
    more = {} if item is None else {"participant_id": item.participant_id, "source_id": item.source_id}
    rows = answer_selectors.lay_answers(where=_where(participant, study, **more))
    return [row for row in rows if phase is None or row.phase == phase]


def lay_answer(item, phase: str) -> LayAnswerRow:
    return _one(lay_answers(item=item, phase=phase), f"{phase} answers")


def preferences(*, participant=None, study=None, item=None) -> list[PreferenceRow]:
    more = {} if item is None else {"participant_id": item.participant_id, "source_id": item.source_id}
    return answer_selectors.lay_preferences(where=_where(participant, study, **more))


def preference(item) -> PreferenceRow:
    return _one(preferences(item=item), "preferences")


def control_answers(*, participant=None, study=None, control=None) -> list[ControlAnswerRow]:
    more = {} if control is None else {"control_id": getattr(control, "pk", control)}
    return answer_selectors.control_answers(where=_where(participant, study, **more))


def item_answers() -> QuerySet[ItemAnswer]:
    """The item answers besides the protocol's own items and the planted controls' rows: what
    ItemAnswer held before it held every answer (a team's added items, the other flows' items)."""
    return ItemAnswer.objects.filter(control__isnull=True).exclude(answer_selectors.protocol_answers())
