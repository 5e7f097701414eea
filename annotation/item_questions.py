"""An instrument item as a survey page shows it, in one language: its wording, its choices and the
answer so far. Both flows build their added items' questions here and render them with one
template partial per kind (templates/surveys/items/); the protocol's bound items keep their
flows' own rows, with their wording taken from the same instrument."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_lazy

from instruments.answers import InvalidAnswer
from instruments.schema import NOT_APPLICABLE, Item, ItemKind

# The partial of each kind a page can show (instrument_services.PAGE_KINDS).
_PARTIAL = {
    ItemKind.ORDINAL: "surveys/items/_choice.html",
    ItemKind.SINGLE_CHOICE: "surveys/items/_choice.html",
    ItemKind.COUNT: "surveys/items/_count.html",
    ItemKind.FREE_TEXT: "surveys/items/_free_text.html",
    ItemKind.ERROR_SPANS: "surveys/items/_error_spans.html",
}


def shown(texts: Mapping[str, str], language: str) -> str:
    """An item's text in `language` ("" for an optional text the item does not have)."""
    return texts.get(language, "") if texts else ""


@dataclass(frozen=True)
class Choice:
    value: str  # what the form posts: a point's code, "not_applicable" or an option's key
    label: str
    definition: str = ""


@dataclass
class ItemQuestion:
    field: str
    key: str
    kind: str
    title: str
    wording: str
    help: str
    number: str
    required: bool
    choices: tuple[Choice, ...] = ()
    max_length: int | None = None
    max_count: int | None = None
    value: Any = None
    errors: list[str] = dataclasses.field(default_factory=list)
    # An error-span item: its severities (the categories are `choices`) and the text it marks, as
    # stored (SimplificationText.text): the page shows exactly these characters.
    severities: tuple[Choice, ...] = ()
    # AI-assisted marking (annotation/span_suggestions.py): the suggestions shown, each with its
    # origin kept server-side and the fate stored so far.
    suggestions: tuple[dict[str, Any], ...] = ()
    text: str = ""
    # Set on every error-span question of a page but the first: the field whose instructions (the
    # item's help and the keys) describe this one too, so the page shows them once.
    keys_of: str = ""

    @property
    def name(self) -> str:
        """The form field (as the lay flow's questions call it)."""
        return self.field

    @property
    def template(self) -> str:
        return _PARTIAL[ItemKind(self.kind)]

    @property
    def shown_value(self) -> str:
        return "" if self.value is None else str(self.value)

    @property
    def answered(self) -> bool:
        return self.value is not None and self.value != ""

    @property
    def marks_json(self) -> str:
        """An error-span answer as the page's answer field holds it ("" when none was given, so a
        form sent without JavaScript leaves the answer as it is)."""
        return "" if self.value is None else json.dumps(self.value, separators=(",", ":"))

    @property
    def marks(self) -> list[Mark]:
        """An error-span answer's marks with the text each covers, as the page lists them."""
        categories = {choice.value: choice.label for choice in self.choices}
        severities = {choice.value: choice.label for choice in self.severities}
        return [
            Mark(
                start=span["start"],
                end=span["end"],
                quote=self.text[span["start"] : span["end"]],
                category=categories.get(span["category"], span["category"]),
                severity=severities.get(span["severity"], span["severity"]),
            )
            for span in (self.value or [])
        ]


@dataclass(frozen=True)
class Mark:
    start: int
    end: int
    quote: str
    category: str
    severity: str


def item_choices(item: Item, language: str) -> tuple[Choice, ...]:
    if item.scale is not None:
        points = tuple(
            Choice(str(p.code), shown(p.label, language), shown(p.definition, language))
            for p in item.scale.points
        )
        if item.scale.not_applicable:
            points += (Choice(NOT_APPLICABLE, shown(item.scale.not_applicable, language)),)
        return points
    return tuple(Choice(option.key, shown(option.label, language)) for option in item.options)


def item_question(
    item: Item, *, field: str, language: str, value: Any = None, text: str = ""
) -> ItemQuestion:
    """`text` is the shown text an error-span item marks (ignored by the other kinds)."""
    return ItemQuestion(
        field=field,
        key=item.key,
        kind=item.kind.value,
        title=shown(item.title, language),
        wording=shown(item.wording, language),
        help=shown(item.help, language),
        number=item.number,
        required=item.required,
        choices=item_choices(item, language),
        max_length=item.max_length,
        max_count=item.max_count,
        value=value,
        severities=tuple(Choice(option.key, shown(option.label, language)) for option in item.severities),
        text=text if item.kind is ItemKind.ERROR_SPANS else "",
    )


# instruments.answers.REFUSALS as gettext message ids (the same English, a test keeps them equal):
# the refusal of an added item's answer is shown to a participant in their language.
_REFUSALS = {
    "required": gettext_lazy("an answer is required"),
    "scale_not_whole": gettext_lazy("a scale answer must be a whole number, not %(value)s"),
    "count_not_whole": gettext_lazy("a count must be a whole number, not %(value)s"),
    "field_not_whole": gettext_lazy("%(field)s must be a whole number, not %(value)s"),
    "no_not_applicable": gettext_lazy("this scale has no 'not applicable' answer"),
    "not_a_point": gettext_lazy("%(value)s is not a point of the scale (%(codes)s)"),
    "not_an_option": gettext_lazy("%(value)s is not one of %(allowed)s"),
    "not_a_list": gettext_lazy("a multiple-choice answer is a list of choices"),
    "not_among": gettext_lazy("%(values)s not among %(allowed)s"),
    "negative_count": gettext_lazy("a count cannot be negative"),
    "count_above": gettext_lazy("at most %(limit)s"),
    "not_text": gettext_lazy("must be text"),
    "too_long": gettext_lazy("at most %(limit)s characters (got %(length)s)"),
    "matching_shape": gettext_lazy("a sentence matching is {generated_count, matches}"),
    "generated_negative": gettext_lazy("generated_count cannot be negative"),
    "matches_not_list": gettext_lazy("matches is a list, one entry per reference sentence"),
    "match_row_not_list": gettext_lazy("matches[%(row)s] is a list of generated sentence numbers"),
    "match_outside": gettext_lazy(
        "matches[%(row)s]: %(outside)s not among the %(generated)s generated sentences"
    ),
    "no_reference": gettext_lazy("the reference has no sentence to match"),
    "spans_not_list": gettext_lazy("error spans are a list of {start, end, category, severity}"),
    "span_shape": gettext_lazy("spans[%(row)s] is {start, end, category, severity}"),
    "span_order": gettext_lazy("spans[%(row)s] must have 0 <= start < end"),
    "span_after_text": gettext_lazy("spans[%(row)s] ends at %(end)s, after the text's %(length)s characters"),
    "span_field": gettext_lazy("spans[%(row)s].%(field)s %(value)s is not one of %(allowed)s"),
    "not_stored": gettext_lazy("%(value)s is not a stored %(kind)s value"),
}


def item_refusal(refused: InvalidAnswer) -> str:
    """Why an answer was refused, in the active language, without the item's key (each flow names
    the item its own way)."""
    wording = str(_REFUSALS[refused.code])
    return wording % refused.params if refused.params else wording
