"""An instrument's `practice:` section, the qualification round's items: read and checked (every
broken field reported with its path, as the rest of the document is), and written back. Django-free.

    practice:
      - key: p_correctness_1
        item: correctness          # an item of this instrument; its roles say who practises it
        source: {en: "...", es: "..."}     # the original shown
        text: {en: "...", es: "..."}       # the simplification (items about a simplification or pair)
        other: {en: "...", es: "..."}      # the second text (items about a pair, pairwise items)
        gold: 2                    # the stored form of the answer (instruments/answers.py)
        within: 1                  # the tolerance, by kind (below)
        explanation: {en: "...", es: "..."}

Tolerances: ordinal and count items `within` points (0 = exactly); single choice and pairwise
`also_accept` (further option keys counted correct); multiple choice and error spans `min_overlap`
(0..1: the Jaccard share of choices; the character-level F1 of the spans); free text `keywords`
per language (the answer counts when it mentions one). An error-span item's gold is per language
(`gold: {en: [{start, end, category, severity}], es: [...]}`), since the offsets count the
characters of that language's text."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from instruments.answers import ErrorSpan, InvalidAnswer, item_value_validate
from instruments.schema import OPTIONS_FROM_TEXTS, AppliesTo, Item, ItemKind, PracticeItem, Wording

PRACTICE_FIELDS = (
    "key",
    "item",
    "source",
    "text",
    "other",
    "gold",
    "explanation",
    "within",
    "also_accept",
    "min_overlap",
    "keywords",
    "note",
)
# The tolerance each kind takes; any other tolerance is an error.
_TOLERANCE: dict[ItemKind, str] = {
    ItemKind.ORDINAL: "within",
    ItemKind.COUNT: "within",
    ItemKind.SINGLE_CHOICE: "also_accept",
    ItemKind.PAIRWISE: "also_accept",
    ItemKind.MULTIPLE_CHOICE: "min_overlap",
    ItemKind.ERROR_SPANS: "min_overlap",
    ItemKind.FREE_TEXT: "keywords",
}
_TOLERANCES = ("within", "also_accept", "min_overlap", "keywords")


def needs_text(item: Item) -> bool:
    return item.applies_to is not AppliesTo.SOURCE or item.kind is ItemKind.PAIRWISE


def needs_other(item: Item) -> bool:
    return item.applies_to is AppliesTo.PAIR or item.kind is ItemKind.PAIRWISE


def practice_from_data(
    reader: Any, value: object, items: tuple[Item, ...], *, slug: re.Pattern[str]
) -> tuple[PracticeItem, ...]:
    """The practice items of a document's `practice` list; `reader` is validation's _Reader (it
    collects the errors), `slug` its pattern of keys. `items` are the instrument's items as parsed."""
    by_key = {item.key: item for item in items}
    parsed: list[tuple[str, PracticeItem]] = []
    for i, raw_entry in enumerate(reader.listing(value, "practice")):
        entry = _practice_item(reader, raw_entry, f"practice[{i}]", by_key, slug)
        if entry is not None:
            parsed.append((f"practice[{i}]", entry))
    seen: set[str] = set()
    for path, entry in parsed:
        if entry.key in seen:
            reader.error(f"{path}.key", f"duplicate practice key {entry.key!r}")
        seen.add(entry.key)
    return tuple(entry for _, entry in parsed)


def _practice_item(
    reader: Any, value: object, path: str, items: Mapping[str, Item], slug: re.Pattern[str]
) -> PracticeItem | None:
    raw = reader.mapping(value, path, PRACTICE_FIELDS)
    if raw is None:
        return None
    before = len(reader.errors)
    for name in ("key", "item", "source", "gold", "explanation"):
        if name not in raw:
            reader.error(f"{path}.{name}", "missing")
    key = reader.string(raw.get("key"), f"{path}.key", pattern=slug) if "key" in raw else None
    item = _item_of(reader, raw, path, items)
    source = reader.wording(raw.get("source"), f"{path}.source") if "source" in raw else {}
    explanation = (
        reader.wording(raw.get("explanation"), f"{path}.explanation") if "explanation" in raw else {}
    )
    texts: dict[str, Wording] = {}
    for name, wanted in (
        ("text", item is not None and needs_text(item)),
        ("other", item is not None and needs_other(item)),
    ):
        if wanted:
            texts[name] = reader.wording(raw.get(name), f"{path}.{name}") if name in raw else {}
            if name not in raw:
                reader.error(f"{path}.{name}", f"missing: item {item.key!r} is asked about it")  # type: ignore[union-attr]
        elif name in raw and item is not None:
            reader.error(
                f"{path}.{name}", f"not used: item {item.key!r} applies to the {item.applies_to.value}"
            )
    note = raw.get("note", "")
    if not isinstance(note, str):
        reader.error(f"{path}.note", "must be a string")
        note = ""
    if item is None:
        return None
    tolerance = _tolerance(reader, raw, path, item)
    gold = _gold(reader, raw, path, item, texts.get("text", {})) if "gold" in raw else None
    if len(reader.errors) != before or key is None:
        return None
    return PracticeItem(
        key=key,
        item=item.key,
        source=source,
        text=texts.get("text", MappingProxyType({})),
        other=texts.get("other", MappingProxyType({})),
        explanation=explanation,
        gold=gold,
        note=note,
        **tolerance,
    )


def _item_of(reader: Any, raw: dict[str, Any], path: str, items: Mapping[str, Item]) -> Item | None:
    if "item" not in raw:
        return None
    item = items.get(raw["item"]) if isinstance(raw["item"], str) else None
    if item is None:
        reader.error(f"{path}.item", f"{raw['item']!r} is not an item of this instrument")
        return None
    if item.kind not in _TOLERANCE:
        reader.error(f"{path}.item", f"{item.key!r} is {item.kind.value}: a practice item cannot ask it")
        return None
    if item.options_from == OPTIONS_FROM_TEXTS:
        reader.error(
            f"{path}.item", f"{item.key!r} takes its options from a page's texts: it has no gold answer"
        )
        return None
    return item


def _tolerance(reader: Any, raw: dict[str, Any], path: str, item: Item) -> dict[str, Any]:
    own = _TOLERANCE[item.kind]
    for name in _TOLERANCES:
        if name in raw and name != own:
            reader.error(f"{path}.{name}", f"not used by kind {item.kind.value} (its tolerance is {own})")
    out: dict[str, Any] = {}
    if own == "within" and "within" in raw:
        within = reader.integer(raw["within"], f"{path}.within", minimum=0)
        out["within"] = within or 0
    elif own == "also_accept" and "also_accept" in raw:
        keys = [option.key for option in item.options]
        accepted = reader.listing(raw["also_accept"], f"{path}.also_accept")
        for i, key in enumerate(accepted):
            if key not in keys:
                reader.error(f"{path}.also_accept[{i}]", f"{key!r} is not one of {', '.join(keys)}")
        out["also_accept"] = tuple(str(key) for key in accepted)
    elif own == "min_overlap" and "min_overlap" in raw:
        share = raw["min_overlap"]
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            reader.error(f"{path}.min_overlap", f"{share!r} must be a share above 0 and at most 1")
        else:
            out["min_overlap"] = float(share)
    elif own == "keywords":
        out["keywords"] = _keywords(reader, raw.get("keywords"), f"{path}.keywords")
    return out


def _keywords(reader: Any, value: object, path: str) -> Mapping[str, tuple[str, ...]]:
    if not isinstance(value, Mapping):
        reader.error(
            path,
            "missing: a free-text practice item counts an answer that mentions one of "
            "its keywords (a list per offered language)",
        )
        return MappingProxyType({})
    out: dict[str, tuple[str, ...]] = {}
    for language in reader.languages:
        words = reader.listing(value.get(language), f"{path}.{language}", at_least=1)
        out[language] = tuple(
            word for i, raw in enumerate(words) if (word := reader.string(raw, f"{path}.{language}[{i}]"))
        )
    for language in value:
        if language not in reader.languages:
            reader.error(f"{path}.{language}", "is not an offered language")
    return MappingProxyType(out)


def _gold(reader: Any, raw: dict[str, Any], path: str, item: Item, text: Wording) -> object:
    """The gold answer in its stored form, checked as a participant's answer is: a gold outside the
    item's scale or options is refused with the item's own reason."""
    gold = raw["gold"]
    if item.kind is ItemKind.ERROR_SPANS:
        if not isinstance(gold, Mapping):
            reader.error(f"{path}.gold", "an error-span gold gives the spans per language ({en: [...], ...})")
            return None
        spans: dict[str, tuple[ErrorSpan, ...]] = {}
        for language in reader.languages:
            if language not in gold:
                reader.error(f"{path}.gold.{language}", "missing: every offered language needs its spans")
                continue
            checked = _checked(
                reader, f"{path}.gold.{language}", item, gold[language] or [], len(text.get(language, ""))
            )
            spans[language] = checked or ()
        return MappingProxyType(spans)
    if gold is None or gold == "" or gold == []:
        reader.error(f"{path}.gold", "a practice item needs a gold answer")
        return None
    return _checked(reader, f"{path}.gold", item, gold, None)


def _checked(reader: Any, path: str, item: Item, gold: object, text_length: int | None) -> Any:
    try:
        return item_value_validate(_required(item), gold, text_length=text_length)
    except InvalidAnswer as refused:
        reader.error(path, f"{refused.reason} (item {item.key!r})")
        return None


def _required(item: Item) -> Item:
    # An error-span gold may be empty (nothing wrong to mark); every other gold was checked present.
    if item.kind is ItemKind.ERROR_SPANS or not item.required:
        return replace(item, required=False)
    return item


def practice_to_data(entry: PracticeItem, item: Item) -> dict[str, Any]:
    data: dict[str, Any] = {"key": entry.key, "item": entry.item, "source": dict(entry.source)}
    if entry.text:
        data["text"] = dict(entry.text)
    if entry.other:
        data["other"] = dict(entry.other)
    data["gold"] = gold_data(entry, item)
    if item.kind in (ItemKind.ORDINAL, ItemKind.COUNT) and entry.within:
        data["within"] = entry.within
    if entry.also_accept:
        data["also_accept"] = list(entry.also_accept)
    if item.kind in (ItemKind.MULTIPLE_CHOICE, ItemKind.ERROR_SPANS) and entry.min_overlap != 1.0:
        data["min_overlap"] = entry.min_overlap
    if entry.keywords:
        data["keywords"] = {language: list(words) for language, words in entry.keywords.items()}
    data["explanation"] = dict(entry.explanation)
    if entry.note:
        data["note"] = entry.note
    return data


def _spans_data(spans: tuple[ErrorSpan, ...]) -> list[dict[str, Any]]:
    return [{"start": s.start, "end": s.end, "category": s.category, "severity": s.severity} for s in spans]


def gold_data(entry: PracticeItem, item: Item, language: str | None = None) -> Any:
    """The gold answer as JSON (an error-span gold in `language` alone when one is given)."""
    gold = entry.gold
    if item.kind is ItemKind.ERROR_SPANS:
        assert isinstance(gold, Mapping)
        if language is not None:
            return _spans_data(gold.get(language, ()))
        return {lang: _spans_data(spans) for lang, spans in gold.items()}
    if isinstance(gold, frozenset):
        return sorted(gold)
    return gold
