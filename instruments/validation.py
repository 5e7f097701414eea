"""Instruments from and to plain data (YAML, JSON): every rule checked, every broken field reported
with its path (`items[3].scale.points[2].code: must be an integer`), all of them at once, so a
researcher fixes a document in one pass. Django-free."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import yaml

from instruments.document_limits import DocumentRefused, document_load
from instruments.practice import practice_from_data, practice_to_data
from instruments.schema import (
    OPTIONS_FROM_TEXTS,
    AppliesTo,
    Citation,
    Instrument,
    Item,
    ItemKind,
    Option,
    Phase,
    Point,
    ProportionOf,
    Scale,
    TranslationStatus,
    Wording,
)

SLUG = re.compile(r"^[a-z][a-z0-9_]*$")
# BCP 47's common shapes: "en", "es", "pt-BR", "zh-Hant".
LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")

_E = TypeVar("_E", bound=StrEnum)


class InstrumentError(ValueError):
    """An instrument document that breaks one or more rules; `errors` holds one line per problem,
    each starting with the path of the field."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(self.errors))


class _Reader:
    """Walks a document, collecting errors instead of stopping at the first."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.languages: tuple[str, ...] = ()

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{path}: {message}" if path else message)

    def mapping(self, value: object, path: str, allowed: tuple[str, ...]) -> dict[str, Any] | None:
        if not isinstance(value, Mapping):
            self.error(path, "must be a mapping")
            return None
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if not isinstance(key, str):
                # YAML reads an unquoted yes/no/on/off as a boolean: say how to keep it a name.
                self.error(f"{path}.{key}" if path else str(key), "field names must be strings (quote it)")
            elif key not in allowed:
                self.error(_join(path, key), f"unknown field (allowed: {', '.join(allowed)})")
            else:
                out[key] = inner
        return out

    def string(self, value: object, path: str, *, pattern: re.Pattern[str] | None = None) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.error(path, "must be a non-empty string")
            return None
        if pattern is not None and not pattern.match(value):
            self.error(path, f"{value!r} must match {pattern.pattern}")
            return None
        return value

    def integer(self, value: object, path: str, *, minimum: int | None = None) -> int | None:
        # bool is an int in Python; a YAML `true` is not a code.
        if not isinstance(value, int) or isinstance(value, bool):
            self.error(path, "must be an integer")
            return None
        if minimum is not None and value < minimum:
            self.error(path, f"must be at least {minimum}")
            return None
        return value

    def boolean(self, value: object, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.error(path, "must be true or false")
            return None
        return value

    def choice(self, value: object, path: str, enum: type[_E]) -> _E | None:
        if isinstance(value, str) and value in {member.value for member in enum}:
            return enum(value)
        self.error(path, f"{value!r} is not one of: {', '.join(member.value for member in enum)}")
        return None

    def listing(self, value: object, path: str, *, at_least: int = 0) -> list[Any]:
        if not isinstance(value, list):
            self.error(path, "must be a list")
            return []
        if len(value) < at_least:
            self.error(path, f"must have at least {at_least} entr{'y' if at_least == 1 else 'ies'}")
        return value

    def wording(self, value: object, path: str, *, optional: bool = False) -> Wording:
        """A text per offered language: every one present (an optional text may be left out
        entirely, not in part), none that the instrument does not offer."""
        if value is None and optional:
            return MappingProxyType({})
        if not isinstance(value, Mapping):
            self.error(path, "must map each offered language to its text")
            return MappingProxyType({})
        out: dict[str, str] = {}
        for language, text in value.items():
            if language not in self.languages:
                self.error(_join(path, str(language)), "is not an offered language")
            elif (checked := self.string(text, _join(path, language))) is not None:
                out[language] = checked
        for language in self.languages:
            if language not in value:
                self.error(_join(path, language), "missing: every offered language needs this text")
        # Read-only, so a frozen instrument's texts cannot be changed behind its fingerprint.
        return MappingProxyType(out)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _unique(reader: _Reader, values: list[tuple[str, object]], what: str) -> None:
    """Report each value seen a second time, at the path of the repeat."""
    seen: set[object] = set()
    for path, value in values:
        if value in seen:
            reader.error(path, f"duplicate {what} {value!r}")
        seen.add(value)


_TOP = (
    "key",
    "version",
    "title",
    "citation",
    "languages",
    "default_language",
    "translation_status",
    "description",
    "phases",
    "items",
    "practice",
)
_CITATION = ("title", "authors", "venue", "year", "section", "short", "note")
_ITEM: tuple[str, ...] = (
    "key",
    "kind",
    "applies_to",
    "roles",
    "wording",
    "help",
    "required",
    "title",
    "short_wording",
    "number",
    "phases",
    "note",
)
# The kind-specific fields each kind takes; any other kind-specific field is an error.
_KIND_FIELDS: dict[ItemKind, tuple[str, ...]] = {
    ItemKind.ORDINAL: ("scale",),
    ItemKind.SINGLE_CHOICE: ("options", "options_from"),
    ItemKind.MULTIPLE_CHOICE: ("options", "options_from", "exclusive_with"),
    ItemKind.COUNT: ("max_count",),
    ItemKind.FREE_TEXT: ("max_length",),
    ItemKind.SENTENCE_MATCHING: ("proportion_of",),
    ItemKind.ERROR_SPANS: ("options", "severities"),
    ItemKind.PAIRWISE: ("options",),
}
# Every kind-specific field, once, in the order the kinds above name them.
_KIND_SPECIFIC = tuple(dict.fromkeys(field for fields in _KIND_FIELDS.values() for field in fields))
_ITEM += _KIND_SPECIFIC


def instrument_from_data(data: object) -> Instrument:
    """Build an instrument from a parsed YAML/JSON document; raises InstrumentError listing every
    problem with its path."""
    reader = _Reader()
    top = reader.mapping(data, "", _TOP)
    if top is None:
        raise InstrumentError(reader.errors)
    for name in ("key", "version", "title", "citation", "languages", "default_language", "items"):
        if name not in top:
            reader.error(name, "missing")
    key = reader.string(top.get("key"), "key", pattern=SLUG) if "key" in top else None
    version = reader.integer(top.get("version"), "version", minimum=1) if "version" in top else None
    languages = _languages(reader, top)
    reader.languages = languages
    default_language = top.get("default_language")
    if "default_language" in top and default_language not in languages:
        reader.error("default_language", f"{default_language!r} is not one of the languages")
    status = _translation_status(reader, top.get("translation_status"), languages)
    title = reader.wording(top.get("title"), "title") if "title" in top else {}
    description = reader.wording(top.get("description"), "description", optional=True)
    citation = _citation(reader, top.get("citation")) if "citation" in top else None
    phases = _phases(reader, top.get("phases", []))
    items = _items(reader, top["items"], {phase.key for phase in phases}) if "items" in top else ()
    practice = practice_from_data(reader, top.get("practice", []), items, slug=SLUG)
    if reader.errors:
        raise InstrumentError(reader.errors)
    assert key is not None and version is not None and citation is not None
    return Instrument(
        key=key,
        version=version,
        title=title,
        citation=citation,
        languages=languages,
        default_language=str(default_language),
        translation_status=status,
        items=items,
        phases=phases,
        description=description,
        practice=practice,
    )


def _languages(reader: _Reader, top: dict[str, Any]) -> tuple[str, ...]:
    if "languages" not in top:
        return ()
    raw = reader.listing(top["languages"], "languages", at_least=1)
    found = [
        (f"languages[{i}]", code)
        for i, value in enumerate(raw)
        if (code := reader.string(value, f"languages[{i}]", pattern=LANGUAGE)) is not None
    ]
    _unique(reader, list(found), "language")
    return tuple(dict.fromkeys(code for _, code in found))


def _translation_status(
    reader: _Reader, value: object, languages: tuple[str, ...]
) -> Mapping[str, TranslationStatus]:
    path = "translation_status"
    if value is None:
        reader.error(
            path, "missing: give each language's status (source, unvalidated translation, validated)"
        )
        return {}
    raw = reader.mapping(value, path, languages)
    if raw is None:
        return {}
    status = {
        language: checked
        for language, given in raw.items()
        if (checked := reader.choice(given, _join(path, language), TranslationStatus)) is not None
    }
    for language in languages:
        if language not in raw:
            reader.error(_join(path, language), "missing")
    sources = [language for language, s in status.items() if s is TranslationStatus.SOURCE]
    if len(status) == len(languages) and len(sources) != 1:
        reader.error(path, f"exactly one language must be the source (found {len(sources)})")
    return MappingProxyType(status)


def _citation(reader: _Reader, value: object) -> Citation | None:
    raw = reader.mapping(value, "citation", _CITATION)
    if raw is None:
        return None
    texts = {}
    for name in ("title", "authors", "venue", "section"):
        texts[name] = reader.string(raw.get(name), f"citation.{name}") or ""
    year = raw.get("year")
    if year is not None:
        year = reader.integer(year, "citation.year", minimum=1900)
    for name in ("short", "note"):
        text = raw.get(name, "")
        if not isinstance(text, str):
            reader.error(f"citation.{name}", "must be a string")
            text = ""
        texts[name] = text
    return Citation(year=year, **texts)


def _phases(reader: _Reader, value: object) -> tuple[Phase, ...]:
    phases = []
    for i, raw_phase in enumerate(reader.listing(value, "phases")):
        path = f"phases[{i}]"
        raw = reader.mapping(raw_phase, path, ("key", "intro"))
        if raw is None:
            continue
        key = reader.string(raw.get("key"), f"{path}.key", pattern=SLUG)
        intro = reader.wording(raw.get("intro"), f"{path}.intro", optional=True)
        if key is not None:
            phases.append((f"{path}.key", Phase(key=key, intro=intro)))
    _unique(reader, [(path, phase.key) for path, phase in phases], "phase key")
    return tuple(phase for _, phase in phases)


def _items(reader: _Reader, value: object, phase_keys: set[str]) -> tuple[Item, ...]:
    parsed: list[tuple[str, Item]] = []
    for i, raw_item in enumerate(reader.listing(value, "items", at_least=1)):
        item = _item(reader, raw_item, f"items[{i}]", phase_keys)
        if item is not None:
            parsed.append((f"items[{i}]", item))
    _unique(reader, [(f"{path}.key", item.key) for path, item in parsed], "item key")
    # Keys written in the document, parsed or not: a reference to an item that is broken itself
    # (or whose key is repeated) is reported there, not again here.
    written = (
        Counter(raw.get("key") for raw in value if isinstance(raw, Mapping))
        if isinstance(value, list)
        else {}
    )
    by_key = {item.key: item for _, item in parsed if written.get(item.key) == 1}
    for path, item in parsed:
        if item.exclusive_with and (item.exclusive_with in by_key or item.exclusive_with not in written):
            _check_exclusive(reader, item, by_key, f"{path}.exclusive_with")
    return tuple(item for _, item in parsed)


def _check_exclusive(reader: _Reader, item: Item, by_key: dict[str, Item], path: str) -> None:
    """Two multiple-choice items whose choices may not overlap (most and least liked): the other
    item exists, is multiple choice over the same options, and names this one back."""
    other = by_key.get(item.exclusive_with)
    if other is None or other.key == item.key:
        reader.error(path, f"{item.exclusive_with!r} is not another item of this instrument")
    elif other.kind is not ItemKind.MULTIPLE_CHOICE:
        reader.error(path, f"{other.key!r} is {other.kind.value}, not multiple_choice")
    elif (other.options_from, [o.key for o in other.options]) != (
        item.options_from,
        [o.key for o in item.options],
    ):
        reader.error(path, f"{other.key!r} must offer the same options")
    elif other.exclusive_with != item.key:
        reader.error(path, f"{other.key!r} must name {item.key!r} in its exclusive_with too")


def _item(reader: _Reader, value: object, path: str, phase_keys: set[str]) -> Item | None:
    raw = reader.mapping(value, path, _ITEM)
    if raw is None:
        return None
    for name in ("key", "kind", "applies_to", "roles", "wording"):
        if name not in raw:
            reader.error(f"{path}.{name}", "missing")
    key = reader.string(raw.get("key"), f"{path}.key", pattern=SLUG) if "key" in raw else None
    kind = reader.choice(raw.get("kind"), f"{path}.kind", ItemKind) if "kind" in raw else None
    applies_to = (
        reader.choice(raw.get("applies_to"), f"{path}.applies_to", AppliesTo) if "applies_to" in raw else None
    )
    roles = _slugs(reader, raw.get("roles"), f"{path}.roles", "role", at_least=1) if "roles" in raw else ()
    phases = _slugs(reader, raw.get("phases", []), f"{path}.phases", "phase")
    for i, phase in enumerate(phases):
        if phase not in phase_keys:
            reader.error(f"{path}.phases[{i}]", f"{phase!r} is not a phase of the instrument")
    wording = reader.wording(raw.get("wording"), f"{path}.wording") if "wording" in raw else {}
    optional_texts = {
        name: reader.wording(raw.get(name), f"{path}.{name}", optional=True)
        for name in ("help", "title", "short_wording")
    }
    required = reader.boolean(raw.get("required", True), f"{path}.required")
    plain = {}
    for name in ("number", "note"):
        text = raw.get(name, "")
        if not isinstance(text, str):
            reader.error(f"{path}.{name}", "must be a string")
            text = ""
        plain[name] = text
    if kind is None:
        return None
    for name in _KIND_SPECIFIC:
        if name in raw and name not in _KIND_FIELDS[kind]:
            reader.error(f"{path}.{name}", f"not used by kind {kind.value}")
    parts = _kind_parts(reader, kind, applies_to, raw, path)
    if key is None or applies_to is None or required is None or parts is None:
        return None
    return Item(
        key=key,
        kind=kind,
        applies_to=applies_to,
        roles=roles,
        wording=wording,
        required=required,
        phases=phases,
        number=plain["number"],
        note=plain["note"],
        help=optional_texts["help"],
        title=optional_texts["title"],
        short_wording=optional_texts["short_wording"],
        **parts,
    )


def _slugs(reader: _Reader, value: object, path: str, what: str, *, at_least: int = 0) -> tuple[str, ...]:
    found = [
        (f"{path}[{i}]", slug)
        for i, raw in enumerate(reader.listing(value, path, at_least=at_least))
        if (slug := reader.string(raw, f"{path}[{i}]", pattern=SLUG)) is not None
    ]
    _unique(reader, list(found), what)
    return tuple(dict.fromkeys(slug for _, slug in found))


def _kind_parts(
    reader: _Reader, kind: ItemKind, applies_to: AppliesTo | None, raw: dict[str, Any], path: str
) -> dict[str, Any] | None:
    """The validated kind-specific fields as Item keyword arguments; None when one is broken."""
    before = len(reader.errors)
    parts: dict[str, Any] = {}
    if kind is ItemKind.ORDINAL:
        if "scale" not in raw:
            reader.error(f"{path}.scale", "missing: an ordinal item needs a scale")
        else:
            parts["scale"] = _scale(reader, raw["scale"], f"{path}.scale")
    elif kind in (ItemKind.SINGLE_CHOICE, ItemKind.MULTIPLE_CHOICE):
        parts.update(_choice_parts(reader, kind, raw, path))
    elif kind is ItemKind.COUNT:
        if raw.get("max_count") is not None:
            parts["max_count"] = reader.integer(raw["max_count"], f"{path}.max_count", minimum=1)
    elif kind is ItemKind.FREE_TEXT:
        if "max_length" not in raw:
            reader.error(f"{path}.max_length", "missing: a free-text item needs a maximum length")
        else:
            parts["max_length"] = reader.integer(raw["max_length"], f"{path}.max_length", minimum=1)
    elif kind is ItemKind.SENTENCE_MATCHING:
        if applies_to not in (None, AppliesTo.PAIR):
            reader.error(
                f"{path}.applies_to", "sentence matching compares a generated text with its reference: pair"
            )
        parts["proportion_of"] = reader.choice(
            raw.get("proportion_of", ProportionOf.GENERATED.value), f"{path}.proportion_of", ProportionOf
        )
    elif kind is ItemKind.ERROR_SPANS:
        if applies_to is AppliesTo.SOURCE:
            reader.error(f"{path}.applies_to", "error spans mark a simplification: simplification or pair")
        # The options are the error categories a span is labelled with; the severities, mildest
        # first, how much each error matters.
        parts["options"] = _options(reader, raw.get("options"), f"{path}.options", at_least=1)
        parts["severities"] = _options(reader, raw.get("severities"), f"{path}.severities", at_least=1)
    elif kind is ItemKind.PAIRWISE:
        if applies_to is AppliesTo.SOURCE:
            reader.error(f"{path}.applies_to", "a pairwise item compares two texts: simplification or pair")
        # The outcomes of one comparison ("first", "tie", "second").
        parts["options"] = _options(reader, raw.get("options"), f"{path}.options", at_least=2)
    return parts if len(reader.errors) == before else None


def _choice_parts(reader: _Reader, kind: ItemKind, raw: dict[str, Any], path: str) -> dict[str, Any]:
    """A choice item's options (or the texts shown as its options) and, for a multiple choice,
    the option that excludes the others."""
    parts: dict[str, Any] = {}
    options_from = raw.get("options_from", "")
    if options_from:
        if options_from != OPTIONS_FROM_TEXTS:
            reader.error(f"{path}.options_from", f"must be {OPTIONS_FROM_TEXTS!r} (the texts shown)")
        if "options" in raw:
            reader.error(f"{path}.options", "give options or options_from, not both")
        parts["options_from"] = OPTIONS_FROM_TEXTS
    else:
        parts["options"] = _options(reader, raw.get("options"), f"{path}.options", at_least=2)
    if kind is ItemKind.MULTIPLE_CHOICE and "exclusive_with" in raw:
        parts["exclusive_with"] = reader.string(raw["exclusive_with"], f"{path}.exclusive_with") or ""
    return parts


def _scale(reader: _Reader, value: object, path: str) -> Scale | None:
    raw = reader.mapping(value, path, ("points", "not_applicable", "note"))
    if raw is None:
        return None
    points = []
    for i, raw_point in enumerate(reader.listing(raw.get("points"), f"{path}.points", at_least=2)):
        point_path = f"{path}.points[{i}]"
        point = reader.mapping(raw_point, point_path, ("code", "label", "definition"))
        if point is None:
            continue
        code = reader.integer(point.get("code"), f"{point_path}.code")
        label = reader.wording(point.get("label"), f"{point_path}.label")
        definition = reader.wording(point.get("definition"), f"{point_path}.definition", optional=True)
        if code is not None:
            points.append((point_path, Point(code=code, label=label, definition=definition)))
    _unique(reader, [(f"{p}.code", point.code) for p, point in points], "code")
    _unique_labels(reader, [(p, point.label) for p, point in points])
    not_applicable = reader.wording(raw.get("not_applicable"), f"{path}.not_applicable", optional=True)
    note = raw.get("note", "")
    if not isinstance(note, str):
        reader.error(f"{path}.note", "must be a string")
        note = ""
    return Scale(points=tuple(point for _, point in points), not_applicable=not_applicable, note=note)


def _options(reader: _Reader, value: object, path: str, *, at_least: int) -> tuple[Option, ...]:
    options = []
    for i, raw_option in enumerate(reader.listing(value, path, at_least=at_least)):
        option_path = f"{path}[{i}]"
        raw = reader.mapping(raw_option, option_path, ("key", "label"))
        if raw is None:
            continue
        key = reader.string(raw.get("key"), f"{option_path}.key", pattern=SLUG)
        label = reader.wording(raw.get("label"), f"{option_path}.label")
        if key is not None:
            options.append((option_path, Option(key=key, label=label)))
    _unique(reader, [(f"{p}.key", option.key) for p, option in options], "key")
    _unique_labels(reader, [(p, option.label) for p, option in options])
    return tuple(option for _, option in options)


def _unique_labels(reader: _Reader, labelled: list[tuple[str, Wording]]) -> None:
    """Two points or options a participant cannot tell apart, in any language, are one too many."""
    for language in reader.languages:
        _unique(
            reader,
            [(f"{p}.label.{language}", label[language]) for p, label in labelled if language in label],
            "label",
        )


# --- Writing ---------------------------------------------------------------------------------------


def instrument_to_data(instrument: Instrument) -> dict[str, Any]:
    """The document `instrument_from_data` reads back to an equal instrument; defaults are left
    out, so a preset's file and its written form look alike."""
    data: dict[str, Any] = {
        "key": instrument.key,
        "version": instrument.version,
        "title": dict(instrument.title),
        "citation": _citation_data(instrument.citation),
        "languages": list(instrument.languages),
        "default_language": instrument.default_language,
        "translation_status": {lang: s.value for lang, s in instrument.translation_status.items()},
    }
    if instrument.description:
        data["description"] = dict(instrument.description)
    if instrument.phases:
        data["phases"] = [_phase_data(phase) for phase in instrument.phases]
    data["items"] = [_item_data(item) for item in instrument.items]
    if instrument.practice:
        data["practice"] = [
            practice_to_data(entry, instrument.item(entry.item)) for entry in instrument.practice
        ]
    return data


def _citation_data(citation: Citation) -> dict[str, Any]:
    data: dict[str, Any] = {
        "title": citation.title,
        "authors": citation.authors,
        "venue": citation.venue,
        "year": citation.year,
        "section": citation.section,
    }
    data.update({name: text for name, text in (("short", citation.short), ("note", citation.note)) if text})
    return data


def _phase_data(phase: Phase) -> dict[str, Any]:
    data: dict[str, Any] = {"key": phase.key}
    if phase.intro:
        data["intro"] = dict(phase.intro)
    return data


def _item_data(item: Item) -> dict[str, Any]:
    data: dict[str, Any] = {
        "key": item.key,
        "kind": item.kind.value,
        "applies_to": item.applies_to.value,
        "roles": list(item.roles),
    }
    for name, text in (("number", item.number), ("phases", list(item.phases))):
        if text:
            data[name] = text
    for name, wording in (("title", item.title), ("wording", item.wording)):
        if wording or name == "wording":
            data[name] = dict(wording)
    for name, wording in (("short_wording", item.short_wording), ("help", item.help)):
        if wording:
            data[name] = dict(wording)
    if not item.required:
        data["required"] = False
    if item.note:
        data["note"] = item.note
    if item.scale is not None:
        data["scale"] = _scale_data(item.scale)
    if item.options:
        data["options"] = [{"key": o.key, "label": dict(o.label)} for o in item.options]
    if item.severities:
        data["severities"] = [{"key": o.key, "label": dict(o.label)} for o in item.severities]
    optional: tuple[tuple[str, object], ...] = (
        ("options_from", item.options_from),
        ("exclusive_with", item.exclusive_with),
        ("max_count", item.max_count),
        ("max_length", item.max_length),
        ("proportion_of", item.proportion_of.value if item.proportion_of else None),
    )
    data.update({name: value for name, value in optional if value not in (None, "")})
    return data


def _scale_data(scale: Scale) -> dict[str, Any]:
    points = []
    for point in scale.points:
        entry: dict[str, Any] = {"code": point.code, "label": dict(point.label)}
        if point.definition:
            entry["definition"] = dict(point.definition)
        points.append(entry)
    data: dict[str, Any] = {"points": points}
    if scale.not_applicable:
        data["not_applicable"] = dict(scale.not_applicable)
    if scale.note:
        data["note"] = scale.note
    return data


# --- Files -----------------------------------------------------------------------------------------


def _parsed(text: str, file_format: str, max_bytes: int | None) -> Instrument:
    try:
        data = document_load(text, file_format=file_format, max_bytes=max_bytes)
    except DocumentRefused as exc:
        raise InstrumentError([str(exc)]) from None
    return instrument_from_data(data)


def instrument_from_yaml(text: str, *, max_bytes: int | None = None) -> Instrument:
    """The instrument of a YAML document; its size and nesting are bounded before it is parsed
    (instruments.document_limits: `max_bytes`, None for a file the operator ships)."""
    return _parsed(text, "yaml", max_bytes)


def instrument_from_json(text: str, *, max_bytes: int | None = None) -> Instrument:
    return _parsed(text, "json", max_bytes)


def instrument_to_yaml(instrument: Instrument) -> str:
    # Unicode as is (Spanish wording stays readable), no line wrapping inside a sentence, the
    # document's own field order.
    text: str = yaml.safe_dump(
        instrument_to_data(instrument), allow_unicode=True, sort_keys=False, width=1_000_000
    )
    return text


def instrument_to_json(instrument: Instrument) -> str:
    return json.dumps(instrument_to_data(instrument), ensure_ascii=False, indent=2) + "\n"


_READERS: dict[str, Callable[[str], Instrument]] = {
    ".yaml": instrument_from_yaml,
    ".yml": instrument_from_yaml,
    ".json": instrument_from_json,
}


def instrument_read(path: Path) -> Instrument:
    """Read an instrument file, by its suffix (.yaml, .yml, .json)."""
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise InstrumentError([f"{path.name}: an instrument file is .yaml, .yml or .json"])
    return reader(path.read_text(encoding="utf-8"))
