"""What a practice page shows, in the participant's language: the texts, the question (built by the
survey's own item_question, rendered with the survey's own partials), and after an answer whether it
was within tolerance, the gold answer in words and the explanation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.item_questions import ItemQuestion, item_choices, item_question, shown
from instruments.practice import gold_data
from instruments.schema import AppliesTo, Item, ItemKind, PracticeItem
from qualification.models import PracticeAnswer
from qualification.selectors import PracticeRound

_PARTIALS = {
    ItemKind.PAIRWISE: "surveys/items/_choice.html",
    ItemKind.MULTIPLE_CHOICE: "qualification/_multiple_choice.html",
}


@dataclass(frozen=True)
class Feedback:
    correct: bool
    explanation: str
    gold: str
    given: str


@dataclass(frozen=True)
class PracticePage:
    key: str
    number: int
    total: int
    source: str
    text: str
    other: str
    text_label: str
    other_label: str
    question: ItemQuestion
    partial: str
    feedback: Feedback | None = None


def _words(item: Item, value: Any, language: str, text: str) -> str:
    """An answer (or gold) said in the page's words: a point's or option's label, the count, the
    text, the marked phrases."""
    if value is None or value == [] or value == "":
        return "—" if item.kind is not ItemKind.ERROR_SPANS else "(nothing marked)"
    labels = {choice.value: choice.label for choice in item_choices(item, language)}
    if item.kind is ItemKind.ORDINAL:
        return f"{value} – {labels.get(str(value), value)}"
    if item.kind in (ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE):
        return labels.get(str(value), str(value))
    if item.kind is ItemKind.MULTIPLE_CHOICE:
        return ", ".join(labels.get(key, key) for key in value)
    if item.kind is ItemKind.ERROR_SPANS:
        return "; ".join(
            f"“{text[span['start'] : span['end']]}” ({labels.get(span['category'], span['category'])})"
            for span in value
        )
    return str(value)


def practice_page(
    found: PracticeRound,
    entry: PracticeItem,
    item: Item,
    *,
    language: str,
    number: int,
    answer: PracticeAnswer | None = None,
) -> PracticePage:
    text = shown(entry.text, language)
    pair = item.applies_to is AppliesTo.PAIR or item.kind is ItemKind.PAIRWISE
    question = item_question(item, field="answer", language=language, value=None, text=text)
    feedback = None
    if answer is not None:
        question.value = answer.value if item.kind is ItemKind.ERROR_SPANS else None
        feedback = Feedback(
            correct=answer.correct,
            explanation=shown(entry.explanation, language),
            gold=_words(item, gold_data(entry, item, language), language, text),
            given=_words(item, answer.value, language, text),
        )
    return PracticePage(
        key=entry.key,
        number=number,
        total=len(found),
        source=shown(entry.source, language),
        text=text,
        other=shown(entry.other, language),
        text_label="A" if item.kind is ItemKind.PAIRWISE else "",
        other_label="B" if item.kind is ItemKind.PAIRWISE else ("reference" if pair else ""),
        question=question,
        partial=_PARTIALS.get(item.kind, question.template if item.kind in _TEMPLATED else ""),
        feedback=feedback,
    )


_TEMPLATED = (
    ItemKind.ORDINAL,
    ItemKind.SINGLE_CHOICE,
    ItemKind.COUNT,
    ItemKind.FREE_TEXT,
    ItemKind.ERROR_SPANS,
)
