"""Where each answer of an instrument is stored: the one table binding the protocol presets' items
to the typed columns that held them before instruments were data (ExpertRating, ExpertSourceJudgement,
LayAnswer, LayPreference: fast, constrained, and what the protocol's Tables 1-3 read), and the JSON
form of every other answer, which goes to ItemAnswer.

An item is *bound* when its instrument's key and its own key are in PROTOCOL_BINDINGS; a study may
add items to a protocol instrument (a new version of it), and those, like every item of any other
instrument, are *unbound*: ItemAnswer rows, value as JSON and score = item_value_code. The flows ask
`binding_of` and never test item keys themselves.

A bound item keeps the preset's structure (kind, applies_to, scale codes …): the column's database
check holds the codes, so `binding_errors` names any change to it (a team wanting a 7-point
correctness adds an item instead)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import models

from annotation import scales
from annotation.models import ExpertRating, ExpertSourceJudgement, LayAnswer, LayPreference
from instruments.answers import AnswerValue, ErrorSpan, SentenceMatches
from instruments.presets import preset_load
from instruments.schema import Instrument, Item, ItemKind
from instruments.versioning import instrument_structure

RADIOLOGIST_PRESET = "protocol_003_radiologist"
LAYPERSON_PRESET = "protocol_003_layperson"


@dataclass(frozen=True)
class Binding:
    """A typed column holding one item's answers. `levels`: the column stores the scale's level
    name (annotation/scales.py), which maps one to one to the item's code; without it the column
    stores the code (the 1-5 Likert columns) or the text (comments, justifications). Choices among
    the texts shown (most/least liked) are the LayPreference many-to-many of that name."""

    model: type[models.Model]
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

    def stored_of(self, value: AnswerValue) -> Any:
        """What the column holds for the item's value (the inverse of value_of)."""
        if value is None:
            return None
        if self.levels is not None:
            return next(level.name for level in self.levels.levels if level.value == value)
        return value


PROTOCOL_BINDINGS: Mapping[str, Mapping[str, Binding]] = {
    RADIOLOGIST_PRESET: {
        "severity": Binding(ExpertSourceJudgement, "severity", scales.SEVERITY),
        "original_simplicity": Binding(ExpertSourceJudgement, "simplicity"),
        "original_comment": Binding(ExpertSourceJudgement, "comment"),
        **{aspect: Binding(ExpertRating, aspect) for aspect in scales.EXPERT_ASPECTS},
        "comment": Binding(ExpertRating, "comment"),
    },
    LAYPERSON_PRESET: {
        **{name: Binding(LayAnswer, name, scales.LAY_SCALES[name]) for name in scales.LAY_QUESTIONS},
        "most": Binding(LayPreference, "most"),
        "most_justification": Binding(LayPreference, "most_justification"),
        "least": Binding(LayPreference, "least"),
        "least_justification": Binding(LayPreference, "least_justification"),
    },
}


def binding_of(instrument_key: str, item_key: str) -> Binding | None:
    """The typed column of a bound item; None for an item stored in ItemAnswer."""
    return PROTOCOL_BINDINGS.get(instrument_key, {}).get(item_key)


def unbound_items(instrument: Instrument) -> tuple[Item, ...]:
    """The items whose answers are ItemAnswer rows (a team's added items, other presets' items)."""
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
                f"item {key!r}: its {', '.join(changed)} cannot change (the answers are stored in "
                f"{bound[key].model.__name__}.{bound[key].column}); add an item of your own instead"
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
