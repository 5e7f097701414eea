"""One answer to one item: checked against the item (`item_value_validate`) and turned into the
number or category the analysis uses (`item_value_code`), so that analysis can later be driven by an
instrument's items rather than by fixed columns. Django-free.

Stored values, by kind:
  ordinal            the point's code (int), or NOT_APPLICABLE where the scale offers it
  single_choice      the option key (str); with options_from="texts" the shown text's key
  multiple_choice    a frozenset of option keys
  count              a non-negative int
  free_text          the text, stripped
  sentence_matching  SentenceMatches: per reference sentence, the generated sentences matching it
  error_spans        a tuple of ErrorSpan: character offsets into the shown text (end exclusive),
                     a category (an option key) and a severity (a severities key)
  pairwise           the outcome's option key (the compare-two flow stores it as the ItemAnswer's
                     {"choice": key, "reason": text}, surveys/compare_two/)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from instruments.schema import NOT_APPLICABLE, OPTIONS_FROM_TEXTS, Instrument, Item, ItemKind, ProportionOf

_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


# What an answer can be refused for, by code, in English with %-style parameters. A flow shows a
# participant the refusal in their language: annotation/item_questions.py holds these same texts as
# gettext message ids (a test keeps the two tables equal), since this package imports no Django.
REFUSALS = {
    "required": "an answer is required",
    "scale_not_whole": "a scale answer must be a whole number, not %(value)s",
    "count_not_whole": "a count must be a whole number, not %(value)s",
    "field_not_whole": "%(field)s must be a whole number, not %(value)s",
    "no_not_applicable": "this scale has no 'not applicable' answer",
    "not_a_point": "%(value)s is not a point of the scale (%(codes)s)",
    "not_an_option": "%(value)s is not one of %(allowed)s",
    "not_a_list": "a multiple-choice answer is a list of choices",
    "not_among": "%(values)s not among %(allowed)s",
    "negative_count": "a count cannot be negative",
    "count_above": "at most %(limit)s",
    "not_text": "must be text",
    "too_long": "at most %(limit)s characters (got %(length)s)",
    "matching_shape": "a sentence matching is {generated_count, matches}",
    "generated_negative": "generated_count cannot be negative",
    "matches_not_list": "matches is a list, one entry per reference sentence",
    "match_row_not_list": "matches[%(row)s] is a list of generated sentence numbers",
    "match_outside": "matches[%(row)s]: %(outside)s not among the %(generated)s generated sentences",
    "no_reference": "the reference has no sentence to match",
    "spans_not_list": "error spans are a list of {start, end, category, severity}",
    "span_shape": "spans[%(row)s] is {start, end, category, severity}",
    "span_order": "spans[%(row)s] must have 0 <= start < end",
    "span_after_text": "spans[%(row)s] ends at %(end)s, after the text's %(length)s characters",
    "span_field": "spans[%(row)s].%(field)s %(value)s is not one of %(allowed)s",
    "not_stored": "%(value)s is not a stored %(kind)s value",
}


class InvalidAnswer(ValueError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """An answer the item cannot take. `code` (a key of REFUSALS) and `params` say why, for a flow
    to word in the participant's language; str() is the English message naming the item (logs,
    commands, judges' parse errors)."""

    def __init__(self, item_key: str, code: str, **params: object) -> None:
        self.item_key = item_key
        self.code = code
        self.params = params
        super().__init__(f"{item_key}: {self.reason}")

    @property
    def reason(self) -> str:
        """The English refusal without the item's key."""
        return REFUSALS[self.code] % self.params if self.params else REFUSALS[self.code]


@dataclass(frozen=True)
class SentenceMatches:
    """Seed 000 section 4.4: for each reference sentence (in order), the indices (0-based) of the
    generated sentences that semantically match it."""

    generated_count: int
    matches: tuple[frozenset[int], ...]

    @property
    def reference_count(self) -> int:
        return len(self.matches)


@dataclass(frozen=True)
class ErrorSpan:
    start: int
    end: int
    category: str
    severity: str


AnswerValue = int | str | frozenset[str] | SentenceMatches | tuple[ErrorSpan, ...] | None
Coded = float | str | frozenset[str] | None


def _as_int(item: Item, raw: object, code: str, **params: object) -> int:
    """An int, or a form's string of one: a web form posts "3", JSON sends 3."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and _WHOLE_NUMBER.fullmatch(raw.strip()):
        return int(raw.strip())
    raise InvalidAnswer(item.key, code, value=repr(raw), **params)


def _choice_keys(item: Item, texts: Sequence[str]) -> tuple[str, ...]:
    if item.options_from == OPTIONS_FROM_TEXTS:
        return tuple(texts)
    return tuple(option.key for option in item.options)


def _is_empty(raw: object) -> bool:
    return (
        raw is None
        or (isinstance(raw, str) and not raw.strip())
        or (isinstance(raw, (list, tuple, set, frozenset)) and not raw)
    )


def item_value_validate(
    item: Item, raw: object, *, texts: Sequence[str] = (), text_length: int | None = None
) -> AnswerValue:
    """The stored value of `raw` as an answer to `item`, or InvalidAnswer. `texts` are the keys of
    the texts a page showed, for a choice item whose options are those texts; `text_length` is the
    length of the text an error-span item marks (spans must lie inside it). An empty answer is None
    where the item is optional."""
    if _is_empty(raw):
        if item.required:
            raise InvalidAnswer(item.key, "required")
        return None
    if item.kind is ItemKind.ORDINAL:
        return _ordinal(item, raw)
    if item.kind in (ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE):
        return _single_choice(item, raw, texts)
    if item.kind is ItemKind.MULTIPLE_CHOICE:
        return _multiple_choice(item, raw, texts)
    if item.kind is ItemKind.COUNT:
        return _count(item, raw)
    if item.kind is ItemKind.FREE_TEXT:
        return _free_text(item, raw)
    if item.kind is ItemKind.SENTENCE_MATCHING:
        return _sentence_matches(item, raw)
    return _error_spans(item, raw, text_length)


def _single_choice(item: Item, raw: object, texts: Sequence[str]) -> str:
    allowed = _choice_keys(item, texts)
    if not isinstance(raw, str) or raw not in allowed:
        raise InvalidAnswer(item.key, "not_an_option", value=repr(raw), allowed=", ".join(allowed))
    return raw


def _multiple_choice(item: Item, raw: object, texts: Sequence[str]) -> frozenset[str]:
    allowed = _choice_keys(item, texts)
    if isinstance(raw, str) or not isinstance(raw, Iterable):
        raise InvalidAnswer(item.key, "not_a_list")
    chosen = list(raw)
    unknown = [choice for choice in chosen if choice not in allowed]
    if unknown:
        raise InvalidAnswer(
            item.key, "not_among", values=", ".join(map(repr, unknown)), allowed=", ".join(allowed)
        )
    return frozenset(chosen)


def _count(item: Item, raw: object) -> int:
    count = _as_int(item, raw, "count_not_whole")
    if count < 0:
        raise InvalidAnswer(item.key, "negative_count")
    if item.max_count is not None and count > item.max_count:
        raise InvalidAnswer(item.key, "count_above", limit=item.max_count)
    return count


def _free_text(item: Item, raw: object) -> str:
    if not isinstance(raw, str):
        raise InvalidAnswer(item.key, "not_text")
    text = raw.strip()
    if item.max_length is not None and len(text) > item.max_length:
        raise InvalidAnswer(item.key, "too_long", limit=item.max_length, length=len(text))
    return text


def _ordinal(item: Item, raw: object) -> int | str:
    assert item.scale is not None
    if raw == NOT_APPLICABLE:
        if not item.scale.not_applicable:
            raise InvalidAnswer(item.key, "no_not_applicable")
        return NOT_APPLICABLE
    code = _as_int(item, raw, "scale_not_whole")
    if code not in item.scale.codes:
        raise InvalidAnswer(item.key, "not_a_point", value=code, codes=item.scale.codes)
    return code


def _sentence_matches(item: Item, raw: object) -> SentenceMatches:
    """`raw` is {"generated_count": m, "matches": [[generated indices] per reference sentence]}."""
    if not isinstance(raw, Mapping) or set(raw) != {"generated_count", "matches"}:
        raise InvalidAnswer(item.key, "matching_shape")
    generated = _as_int(item, raw["generated_count"], "field_not_whole", field="generated_count")
    if generated < 0:
        raise InvalidAnswer(item.key, "generated_negative")
    rows = raw["matches"]
    if isinstance(rows, (str, Mapping)) or not isinstance(rows, Iterable):
        raise InvalidAnswer(item.key, "matches_not_list")
    matches = []
    for i, row in enumerate(rows):
        if isinstance(row, (str, Mapping)) or not isinstance(row, Iterable):
            raise InvalidAnswer(item.key, "match_row_not_list", row=i)
        indices = frozenset(_as_int(item, index, "field_not_whole", field=f"matches[{i}]") for index in row)
        outside = sorted(index for index in indices if not 0 <= index < generated)
        if outside:
            raise InvalidAnswer(item.key, "match_outside", row=i, outside=outside, generated=generated)
        matches.append(indices)
    if not matches:
        raise InvalidAnswer(item.key, "no_reference")
    return SentenceMatches(generated_count=generated, matches=tuple(matches))


def _error_spans(item: Item, raw: object, text_length: int | None) -> tuple[ErrorSpan, ...]:
    """`raw` is a list of {"start", "end", "category", "severity"}: character offsets into the shown
    text (end exclusive). The same span marked twice is kept once; overlapping spans are allowed
    (one phrase can be both jargon and a wrong finding)."""
    categories = [option.key for option in item.options]
    severities = [option.key for option in item.severities]
    if isinstance(raw, (str, Mapping)) or not isinstance(raw, Iterable):
        raise InvalidAnswer(item.key, "spans_not_list")
    spans = set()
    for i, span in enumerate(raw):
        if not isinstance(span, Mapping) or set(span) != {"start", "end", "category", "severity"}:
            raise InvalidAnswer(item.key, "span_shape", row=i)
        start, end = (
            _as_int(item, span["start"], "field_not_whole", field=f"spans[{i}].start"),
            _as_int(item, span["end"], "field_not_whole", field=f"spans[{i}].end"),
        )
        if not 0 <= start < end:
            raise InvalidAnswer(item.key, "span_order", row=i)
        if text_length is not None and end > text_length:
            raise InvalidAnswer(item.key, "span_after_text", row=i, end=end, length=text_length)
        for field, allowed in (("category", categories), ("severity", severities)):
            if span[field] not in allowed:
                raise InvalidAnswer(
                    item.key, "span_field", row=i, field=field, value=repr(span[field]), allowed=allowed
                )
        spans.add(
            ErrorSpan(start=start, end=end, category=str(span["category"]), severity=str(span["severity"]))
        )
    return tuple(sorted(spans, key=lambda s: (s.start, s.end, s.category, s.severity)))


def sentence_matching_proportion(matches: SentenceMatches, proportion_of: ProportionOf) -> float | None:
    """Seed 000 section 4.4 / Algorithm 2 (appendix A.7): the share of generated sentences that
    match at least one reference sentence (`generated`), or the share of reference sentences
    matched by at least one generated sentence (`reference`). None when there is nothing to divide by."""
    if proportion_of is ProportionOf.GENERATED:
        if matches.generated_count == 0:
            return None
        matched: set[int] = set().union(*matches.matches)
        return len(matched) / matches.generated_count
    return sum(1 for row in matches.matches if row) / matches.reference_count


def item_value_code(item: Item, value: AnswerValue) -> Coded:
    """The analysis value of a stored answer: a number for ordinal (the point's code), count,
    sentence matching (the matched proportion) and error spans (how many); the category for single
    choice and pairwise; the set for multiple choice; None for free text, "not applicable" and no
    answer."""
    if value is None or value == NOT_APPLICABLE:
        return None
    kind = item.kind
    if kind in (ItemKind.ORDINAL, ItemKind.COUNT) and isinstance(value, int):
        return float(value)
    if kind is ItemKind.SENTENCE_MATCHING and isinstance(value, SentenceMatches):
        assert item.proportion_of is not None
        return sentence_matching_proportion(value, item.proportion_of)
    if kind is ItemKind.ERROR_SPANS and isinstance(value, tuple):
        return float(len(value))
    if kind in (ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE) and isinstance(value, str):
        return value
    if kind is ItemKind.MULTIPLE_CHOICE and isinstance(value, frozenset):
        return value
    if kind is ItemKind.FREE_TEXT and isinstance(value, str):
        return None
    raise InvalidAnswer(item.key, "not_stored", value=repr(value), kind=kind.value)


def exclusive_overlaps(
    instrument: Instrument, values: Mapping[str, AnswerValue]
) -> dict[str, frozenset[str]]:
    """The choices ticked in both of two items declared exclusive_with each other (a text both most
    and least liked), by item key; empty when the answers respect every such rule. The flow decides
    what to refuse (radlay keeps the tick already stored)."""
    overlaps: dict[str, frozenset[str]] = {}
    for item in instrument.items:
        if not item.exclusive_with:
            continue
        mine, theirs = values.get(item.key), values.get(item.exclusive_with)
        if isinstance(mine, frozenset) and isinstance(theirs, frozenset) and mine & theirs:
            overlaps[item.key] = mine & theirs
    return overlaps
