"""An instrument document's cost is bounded before it is parsed: its size (the caller's limit,
RADLAY_FILE_LIMITS.instrument_bytes on the web) and its nesting. The nesting is the schema's: the deepest
valid instrument is a mapping of `items`, an item, its scale, its points, a point and its wording by
language (seven levels), so a document nested past MAX_NESTING can be no instrument and is refused.

PyYAML's pure-Python parser spends time quadratic in the depth of flow collections ("[[[[…":
100,000 levels cost half a minute before the refusal). So YAML is read by libyaml (C) where PyYAML
has it: libyaml stops at 1,000 levels of any collection within milliseconds, and the data it builds
is then held to MAX_NESTING by a walk without recursion (shared anchors walked once). Without
libyaml the events are counted first and the parser stops at MAX_NESTING. Pure: no Django."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import yaml

# Levels of collections (mappings and lists) a document may nest; an instrument needs seven.
MAX_NESTING = 16
_LIBYAML: Any = getattr(yaml, "CSafeLoader", None)
_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


class DocumentRefused(ValueError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """The document is past a limit (its message says which) or is not valid YAML/JSON."""


def _size_check(text: str, max_bytes: int | None) -> None:
    if max_bytes is None:
        return
    # Characters first: no encoding of a text already too long in characters.
    size = len(text) if len(text) > max_bytes else len(text.encode("utf-8"))
    if size > max_bytes:
        raise DocumentRefused(f"the document is {size:,} bytes; at most {max_bytes:,} are accepted")


def _too_deep() -> DocumentRefused:
    return DocumentRefused(
        f"the document nests more than {MAX_NESTING} levels deep; an instrument needs seven"
    )


def _yaml_events_check(text: str) -> None:
    """Without libyaml: count the events, refused as soon as they nest past MAX_NESTING."""
    loader = yaml.SafeLoader(text)
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()  # type: ignore[no-untyped-call]
            if isinstance(event, _OPEN):
                depth += 1
                if depth > MAX_NESTING:
                    raise _too_deep()
            elif isinstance(event, _CLOSE):
                depth -= 1
    finally:
        loader.dispose()


# Quoted scalars and comments, whose brackets and dashes are text; then what nests without
# indentation: flow brackets, and "- - - x" (a list in a list on one line).
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"|#[^\n]*")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_COMPACT = re.compile(rf"-[ \t]+(?:-[ \t]+){{{MAX_NESTING},}}")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _prescan(text: str) -> None:
    """Refuse, before any parsing, flow brackets or one-line lists nested past MAX_NESTING (C-speed
    passes over the text: milliseconds for a megabyte, so a deep part after a long harmless one
    costs no more than a deep start). Brackets in plain scalars count too: an instrument's wording
    would need more than MAX_NESTING unclosed ones to be refused."""
    stripped = _QUOTED.sub("", text)
    brackets = _NOT_BRACKET.sub("", stripped)
    if brackets and max(itertools.accumulate(map(_STEP.__getitem__, brackets))) > MAX_NESTING:
        raise _too_deep()
    if _COMPACT.search(stripped):
        raise _too_deep()


def _yaml_load(text: str) -> object:
    _prescan(text)
    try:
        if _LIBYAML is None:
            _yaml_events_check(text)
            return yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - the safe loader
        return yaml.load(text, Loader=_LIBYAML)  # noqa: S506 - libyaml's safe loader
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own bound (1,000 levels)
            raise _too_deep() from None
        raise DocumentRefused(f"not valid YAML: {exc}") from None


def _nesting_check(data: object) -> None:
    """The nesting of parsed data, walked without recursion; a collection shared by anchors is
    walked again only when reached deeper (a cycle ends past MAX_NESTING)."""
    deepest: dict[int, int] = {}
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_NESTING:
            raise _too_deep()
        if deepest.get(id(value), 0) >= depth:
            continue
        deepest[id(value)] = depth
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children)


def document_load(text: str, *, file_format: str, max_bytes: int | None) -> object:
    """The data of a YAML or JSON document (`file_format` "yaml" or "json"), or DocumentRefused:
    larger than `max_bytes` (None: no size limit, for files the operator ships), nested past
    MAX_NESTING, or not valid. A deep document is refused within milliseconds."""
    _size_check(text, max_bytes)
    if file_format == "json":
        try:
            data = json.loads(text)
        except RecursionError:  # the C decoder's own bound, met in microseconds
            raise _too_deep() from None
        except ValueError as exc:
            raise DocumentRefused(f"not valid JSON: {exc}") from None
    else:
        data = _yaml_load(text)
    _nesting_check(data)
    return data
