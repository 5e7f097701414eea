"""The protocol's panel-3 choices of a study's laypeople as rows: which texts each one liked most
and least among those shown. Read by the derived pairwise ranking (annotation/pairwise/selectors.py)
and the preference export (evaluation/preference_inputs.py), each with its own participants."""

from __future__ import annotations

from typing import NamedTuple

from django.db.models import Q

from annotation.models import LayPreference, Study


class LayChoice(NamedTuple):
    preference_id: int
    rater: str  # the participant's pseudonym
    source_id: int
    source_key: str
    shown: list[int] | None  # the text ids in the order shown (None where none was stored)
    most: list[int]
    least: list[int]


def lay_choices(*, study: Study, participants: Q) -> list[LayChoice]:
    """Every panel-3 answer of the study's `participants` (a Q over `item__participant__`), by
    participant and source position, in three queries."""
    rows = list(
        LayPreference.objects.filter(participants, item__participant__study=study)
        .values_list(
            "pk", "item__participant__pseudonym", "item__source_id", "item__source__key", "order_shown"
        )
        .order_by("item__participant__pseudonym", "item__source__position")
    )
    chosen: dict[str, dict[int, list[int]]] = {"most": {}, "least": {}}
    for name in chosen:
        through = getattr(LayPreference, name).through
        for preference_id, text_id in through.objects.filter(
            laypreference__item__participant__study=study
        ).values_list("laypreference_id", "simplificationtext_id"):
            chosen[name].setdefault(preference_id, []).append(text_id)
    return [
        LayChoice(*row, most=chosen["most"].get(row[0], []), least=chosen["least"].get(row[0], []))
        for row in rows
    ]
