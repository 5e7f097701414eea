"""The protocol's panel-3 choices of a study's laypeople as rows: which texts each one liked most
and least among those shown. Read by the derived pairwise ranking (surveys/compare_two/selectors.py)
and the preference export (evaluation/exports/preference_selectors.py), each with its own participants."""

from __future__ import annotations

from typing import NamedTuple

from django.db.models import Q

from annotation.answer_selectors import lay_preferences
from annotation.models import Participant, Source, Study


class LayChoice(NamedTuple):
    preference_id: int
    rater: str  # the participant's pseudonym
    source_id: int
    source_key: str
    shown: list[int] | None  # the text ids in the order shown (None where none was stored)
    most: list[int]
    least: list[int]


def lay_choices(*, study: Study, participants: Q) -> list[LayChoice]:
    """Every panel-3 answer of the study's `participants` (a Q over `participant__`), by
    participant and source position (annotation/answer_selectors.py's preferences)."""
    preferences = lay_preferences(study=study, where=participants)
    pseudonyms = dict(Participant.objects.filter(study=study).values_list("pk", "pseudonym"))
    sources = {
        pk: (key, position)
        for pk, key, position in Source.objects.filter(study=study).values_list("pk", "key", "position")
    }
    rows = sorted(preferences, key=lambda p: (pseudonyms.get(p.participant_id, ""), sources[p.source_id][1]))
    return [
        LayChoice(
            p.id,
            pseudonyms.get(p.participant_id, ""),
            p.source_id,
            sources[p.source_id][0],
            list(p.order_shown) if p.item_id is not None else None,
            sorted(p.most),
            sorted(p.least),
        )
        for p in rows
    ]
