"""The error-span questions of a radiologist page: the suggestions they show (AI-assisted
marking) with each one's fate so far, the "no error marked" answer a finished page stores for an
unmarked text, and the instructions shown once per item on the page.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from annotation.instrument_services import item_answers_none_marked
from annotation.item_questions import ItemQuestion
from annotation.models import ExpertItem, ItemAnswer, SimplificationText
from instruments.schema import AppliesTo, ItemKind
from surveys.radiologist import controls as planted

if TYPE_CHECKING:
    from surveys.radiologist.pages import _Asked


def page_suggestions(
    item: ExpertItem, texts: list[tuple[str, SimplificationText]], about_text: list[Any]
) -> dict[tuple[str, int], tuple[dict[str, Any], ...]]:
    """The suggestions the page's error-span questions show (AI-assisted marking), by (item key,
    text id), each with the fate stored before. A page without an error-span item costs no query,
    one of a study without assistance one (the provider reads the option once), an assisted one a
    fixed number whatever its texts (the judge's spans and the stored fates, each in one query).
    A planted control is never assisted."""
    span_items = [i for i in about_text if i.kind is ItemKind.ERROR_SPANS]
    shown_texts = [text for _, text in texts if not planted.is_planted(text.pk)]
    if not span_items or not shown_texts:
        return {}
    from annotation.span_suggestions import offer_with_fates, span_suggestions_page

    offers = span_suggestions_page(
        participant=item.participant, source=item.source, texts=shown_texts, items=span_items
    )
    offers = {key: offer for key, offer in offers.items() if offer[0]}
    if not offers:
        return {}
    stored_rows = (
        ItemAnswer.objects.filter(
            participant_id=item.participant_id,
            item_key__in=sorted({key for key, _ in offers}),
            shown_text_id__in=sorted({text_id for _, text_id in offers}),
        )
        .exclude(suggestions={})
        .order_by("pk")
        .values_list("item_key", "shown_text_id", "suggestions")
    )
    stored: dict[tuple[str, int], Any] = {}
    for key, text_id, suggestions in stored_rows:
        stored.setdefault((key, text_id), suggestions)
    # The page never learns which suggestions are planted: only the place, the category, the
    # severity and the fate so far travel to it (the origin stays on the server and in the answer).
    shown_fields = ("id", "start", "end", "category", "severity", "fate")
    return {
        key: tuple({k: s[k] for k in shown_fields} for s in offer_with_fates(offer, stored.get(key)))
        for key, offer in offers.items()
    }


def with_suggestions(
    question: ItemQuestion,
    text: SimplificationText,
    suggested: Mapping[tuple[str, int], tuple[dict[str, Any], ...]],
) -> ItemQuestion:
    """An error-span question with the suggestions its page offers; unchanged where none are."""
    shown_suggestions = suggested.get((question.key, text.pk))
    if question.kind != ItemKind.ERROR_SPANS.value or not shown_suggestions:
        return question
    return dataclasses.replace(question, suggestions=shown_suggestions)


def no_marks_record(
    *,
    item: ExpertItem,
    texts: list[tuple[str, SimplificationText]],
    asked: _Asked,
    answers: dict[tuple[str, int | None], Any],
) -> None:
    """A page finished without a mark on a text says the rater found no error in it: stored as []
    ("no error marked"), so the span rates count the text as seen (without it, a rater's clean texts
    would leave no row and the rates would be computed over marked texts only). A mark set later
    replaces it like any edit."""
    span_items = [
        i for i in asked.added if i.kind is ItemKind.ERROR_SPANS and i.applies_to is AppliesTo.SIMPLIFICATION
    ]
    if not span_items or asked.current.row_id is None:
        return
    # A planted control's answers are about the control (surveys/radiologist/controls.py): an
    # unmarked control is simply not caught, nothing to store.
    unmarked = [
        (i, text)
        for i in span_items
        for _label, text in texts
        if (i.key, text.pk) not in answers and not planted.is_planted(text.pk)
    ]
    item_answers_none_marked(
        participant_id=item.participant_id,
        instrument_id=asked.current.row_id,
        source_id=item.source_id,
        targets=[(i.key, text.pk) for i, text in unmarked],
        language=asked.language,
    )


def span_instructions_once(questions: list[ItemQuestion]) -> None:
    """The first error-span question of each item on the page carries its instructions; the
    others point to them (templates/surveys/items/_error_spans.html)."""
    first: dict[str, str] = {}
    for question in questions:
        if question.kind == ItemKind.ERROR_SPANS.value:
            if question.key in first:
                question.keys_of = first[question.key]
            else:
                first[question.key] = question.field
