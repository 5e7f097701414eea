"""The protocol presets' items and the typed shapes the protocol's consumers read them in.

Every answer is an ItemAnswer row (annotation/answer_store.py), the protocol's items included.
What needs the protocol's shape (Tables 1-3, the safety gate, the Latin-square balance, the
exports' wide layout) reads it through annotation/answer_selectors.py, which puts each protocol
item in the column of the shape named here: a radiologist's rating of a text (`rating`: the five
aspects and the comment), their judgement of the original (`judgement`: severity, simplicity,
comment), a lay panel's answers (`lay`: Q1-Q4 by level name) and panel 3's preference (`preference`:
the most and least liked texts and the justifications).

An item is *bound* when its instrument's key and its own key are in PROTOCOL_BINDINGS: the
flows' pages lay those out themselves; every other item (a team's added item, any other preset's)
is *unbound* and asked by the generic item questions. The flows ask `binding_of` and never test
item keys themselves.

A bound item keeps the preset's structure (kind, applies_to, scale codes …): the protocol's
analysis reads its codes, so `binding_errors` names any change to it (a team wanting a 7-point
correctness adds an item instead)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotation import scales
from instruments.answers import AnswerValue, ErrorSpan, SentenceMatches
from instruments.presets import preset_load
from instruments.schema import Instrument, Item, ItemKind
from instruments.versioning import instrument_structure

RADIOLOGIST_PRESET = "protocol_003_radiologist"
LAYPERSON_PRESET = "protocol_003_layperson"


@dataclass(frozen=True)
class Binding:
    """The column of a typed shape that one item's answers fill. `levels`: the column holds the
    scale's level name (annotation/scales.py), which maps one to one to the item's code; without it
    the column holds the code (the 1-5 Likert columns) or the text (comments, justifications).
    Choices among the texts shown (most/least liked) are sets of text ids."""

    shape: str
    column: str
    levels: scales.Scale | None = None

    def value_of(self, stored: Any) -> AnswerValue:
        """The item's value (as item_value_validate returns it) of what the column holds."""
        if stored is None or stored == "":
            return None
        if self.levels is not None:
            return self.levels.value_of(stored)
        if isinstance(stored, (set, frozenset)):
            return frozenset(str(pk) for pk in stored) or None
        return stored

    def column_of(self, stored_json: Any) -> Any:
        """What the typed shape's column holds for an ItemAnswer.value of this item."""
        if self.levels is not None:
            return next((level.name for level in self.levels.levels if level.value == stored_json), "")
        if isinstance(stored_json, list):
            return frozenset(int(pk) for pk in stored_json)
        return stored_json

    def answer_of(self, column_value: Any) -> tuple[Any, float | None] | None:
        """(ItemAnswer.value, score) of what the typed shape's column holds; None for no answer."""
        if column_value is None or column_value == "":
            return None
        if self.levels is not None:
            code = self.levels.value_of(column_value)
            if code is None:
                raise ValueError(f"{column_value!r} is no level of {self.column}")
            return code, float(code)
        if isinstance(column_value, (set, frozenset, list, tuple)):
            return (sorted(str(pk) for pk in column_value), None) if column_value else None
        if isinstance(column_value, bool):
            raise TypeError(f"{self.column}: not an answer: {column_value!r}")
        if isinstance(column_value, int):
            return column_value, float(column_value)
        return column_value, None

    def stored_of(self, value: AnswerValue) -> Any:
        """What the column holds for the item's value (the inverse of value_of)."""
        if value is None:
            return None
        if self.levels is not None:
            return next(level.name for level in self.levels.levels if level.value == value)
        return value


# The typed shapes (annotation/answer_selectors.py).
RATING = "rating"
JUDGEMENT = "judgement"
LAY = "lay"
PREFERENCE = "preference"

PROTOCOL_BINDINGS: Mapping[str, Mapping[str, Binding]] = {
    RADIOLOGIST_PRESET: {
        "severity": Binding(JUDGEMENT, "severity", scales.SEVERITY),
        "original_simplicity": Binding(JUDGEMENT, "simplicity"),
        "original_comment": Binding(JUDGEMENT, "comment"),
        **{aspect: Binding(RATING, aspect) for aspect in scales.EXPERT_ASPECTS},
        "comment": Binding(RATING, "comment"),
    },
    LAYPERSON_PRESET: {
        **{name: Binding(LAY, name, scales.LAY_SCALES[name]) for name in scales.LAY_QUESTIONS},
        "most": Binding(PREFERENCE, "most"),
        "most_justification": Binding(PREFERENCE, "most_justification"),
        "least": Binding(PREFERENCE, "least"),
        "least_justification": Binding(PREFERENCE, "least_justification"),
    },
}
# The item key of each typed column, by shape: {shape: {column: item key}}.
SHAPE_ITEMS: Mapping[str, Mapping[str, str]] = {
    shape: {
        b.column: key
        for bindings in PROTOCOL_BINDINGS.values()
        for key, b in bindings.items()
        if b.shape == shape
    }
    for shape in (RATING, JUDGEMENT, LAY, PREFERENCE)
}
SHAPE_PRESET = {RATING: RADIOLOGIST_PRESET, JUDGEMENT: RADIOLOGIST_PRESET, LAY: LAYPERSON_PRESET}
SHAPE_PRESET[PREFERENCE] = LAYPERSON_PRESET


def binding_of(instrument_key: str, item_key: str) -> Binding | None:
    """The typed column of a protocol item; None for any other item."""
    return PROTOCOL_BINDINGS.get(instrument_key, {}).get(item_key)


def unbound_items(instrument: Instrument) -> tuple[Item, ...]:
    """The items the generic item questions ask (a team's added items, other presets' items)."""
    bound = PROTOCOL_BINDINGS.get(instrument.key, {})
    return tuple(item for item in instrument.items if item.key not in bound)


def binding_errors(instrument: Instrument) -> list[str]:
    """What an instrument changes in the structure of its bound items (each must keep the preset's
    kind, target, scale codes and options, since a typed column holds it), and which bound items
    it drops (the flow's page lays them out). Empty for a valid protocol instrument."""
    bound = PROTOCOL_BINDINGS.get(instrument.key)
    if bound is None:
        return []
    preset = instrument_structure(preset_load(instrument.key))
    mine = instrument_structure(instrument)
    errors = [f"item {key!r}: the protocol's item cannot be removed" for key in bound if key not in mine]
    for key in bound:
        if key in mine and mine[key] != preset[key]:
            changed = sorted(
                name
                for name in preset[key].keys() | mine[key].keys()
                if mine[key].get(name) != preset[key].get(name)
            )
            errors.append(
                f"item {key!r}: its {', '.join(changed)} cannot change (the protocol's analysis reads "
                f"it as its {bound[key].shape} {bound[key].column}); add an item of your own instead"
            )
    return errors


# --- ItemAnswer.value: the JSON form of an answer -------------------------------------------------


def item_value_to_json(value: AnswerValue) -> Any:
    """An answer as ItemAnswer.value stores it: sets as sorted lists, a sentence matching as the
    {generated_count, matches} it was given as."""
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, SentenceMatches):
        return {"generated_count": value.generated_count, "matches": [sorted(row) for row in value.matches]}
    if isinstance(value, tuple):
        return [
            {"start": span.start, "end": span.end, "category": span.category, "severity": span.severity}
            for span in value
        ]
    return value


def item_value_from_json(item: Item, stored: Any) -> AnswerValue:
    """The inverse of item_value_to_json for `item`'s kind."""
    if item.kind is ItemKind.MULTIPLE_CHOICE:
        return frozenset(stored)
    if item.kind is ItemKind.SENTENCE_MATCHING:
        return SentenceMatches(
            generated_count=stored["generated_count"],
            matches=tuple(frozenset(row) for row in stored["matches"]),
        )
    if item.kind is ItemKind.ERROR_SPANS:
        return tuple(ErrorSpan(**span) for span in stored)
    return stored
