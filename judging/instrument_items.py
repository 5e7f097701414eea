"""A judge that asks an instrument's items (issue 30): the prompt and the JSON answer schema are
built from the items that apply to one kind of target (the source, a simplification, or a
simplification–reference pair), so a judge for any instrument — seed 002's four criteria, a team's
own rubric — needs no code change. Django-free.

A model answers one JSON object, one field per item key. The object is checked against the schema
built here and then each field with `instruments.answers.item_value_validate` (the check a human
answer passes); anything else raises judging.instrument.AnswerError, so the run records the failure
and never stores it. Items a judge cannot be asked are left out: free text (nothing to analyse) and
choices among "the texts shown" (they belong to a page of several texts, not to one target).

K samples of one target are summarised per item: the score is the median of the coded samples
(as judging.instrument.aggregate_samples does for the protocol's fields), the value is the most
frequent answer (the first of equals), the spread lists the K coded values."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator

from instruments.answers import InvalidAnswer, item_value_code, item_value_validate
from instruments.schema import OPTIONS_FROM_TEXTS, AppliesTo, Instrument, Item, ItemKind
from judging.instrument import AnswerError, parse_json_answer

ITEM_TASK = "instrument_items"
# Numbered sentences a sentence-matching item shows the judge (the same split for the heuristic).
_SENTENCE_HINT = (
    "For each reference sentence R1, R2 … list the numbers (0-based) of the generated sentences G0, G1 … "
    "that say the same thing."
)


def judge_items(instrument: Instrument, applies_to: AppliesTo) -> tuple[Item, ...]:
    """The items a judge answers on a target of kind `applies_to`."""
    return tuple(
        item
        for item in instrument.items
        if item.applies_to is applies_to
        and item.kind is not ItemKind.FREE_TEXT
        and item.options_from != OPTIONS_FROM_TEXTS
    )


def _text(wording: Mapping[str, str], language: str) -> str:
    return wording.get(language) or next(iter(wording.values()), "")


def item_schema(item: Item, *, generated: int = 0, references: int = 0) -> dict[str, Any]:
    """The JSON schema of one item's answer."""
    if item.kind is ItemKind.ORDINAL:
        assert item.scale is not None
        codes: list[Any] = list(item.scale.codes)
        if item.scale.not_applicable:
            codes.append("not_applicable")
        return {"enum": codes}
    if item.kind in (ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE):
        return {"type": "string", "enum": [option.key for option in item.options]}
    if item.kind is ItemKind.MULTIPLE_CHOICE:
        keys = [option.key for option in item.options]
        return {"type": "array", "items": {"type": "string", "enum": keys}, "uniqueItems": True}
    if item.kind is ItemKind.COUNT:
        schema: dict[str, Any] = {"type": "integer", "minimum": 0}
        if item.max_count is not None:
            schema["maximum"] = item.max_count
        return schema
    if item.kind is ItemKind.SENTENCE_MATCHING:
        row = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": max(generated - 1, 0)}}
        return {"type": "array", "items": row, "minItems": references, "maxItems": references}
    raise ValueError(f"{item.key}: a judge cannot answer a {item.kind.value} item")


def answer_schema(items: Sequence[Item], *, generated: int = 0, references: int = 0) -> dict[str, Any]:
    """The JSON schema of a judge's answer to `items`: one field per item, required where the item
    is, plus an optional justification."""
    return {
        "type": "object",
        "properties": {
            **{item.key: item_schema(item, generated=generated, references=references) for item in items},
            "justification": {"type": "string"},
        },
        "required": [item.key for item in items if item.required],
        "additionalProperties": False,
    }


def _describe(item: Item, language: str) -> str:
    title = _text(item.title, language) if item.title else ""
    head = f"{item.key}: " + (f"{title} — " if title else "") + _text(item.wording, language)
    if item.help:
        head += f" ({_text(item.help, language)})"
    if item.kind is ItemKind.ORDINAL:
        assert item.scale is not None
        points = ", ".join(f"{p.code} - {_text(p.label, language)}" for p in item.scale.points)
        if item.scale.not_applicable:
            points += f', "not_applicable" - {_text(item.scale.not_applicable, language)}'
        return f"{head}\n  Answer one of: {points}."
    if item.kind in (ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE, ItemKind.MULTIPLE_CHOICE):
        options = ", ".join(f'"{o.key}" - {_text(o.label, language)}' for o in item.options)
        many = "a list of any of" if item.kind is ItemKind.MULTIPLE_CHOICE else "one of"
        return f"{head}\n  Answer {many}: {options}."
    if item.kind is ItemKind.COUNT:
        return f"{head}\n  Answer a whole number, 0 or more."
    return f"{head}\n  {_SENTENCE_HINT} Answer a list with one list of numbers per reference sentence."


def _example(item: Item) -> str:
    if item.kind is ItemKind.ORDINAL:
        return "<code>"
    if item.kind is ItemKind.MULTIPLE_CHOICE:
        return '["<option>", …]'
    if item.kind is ItemKind.COUNT:
        return "<number>"
    if item.kind is ItemKind.SENTENCE_MATCHING:
        return "[[<G numbers>], …]"
    return '"<option>"'


def item_prompt(
    instrument: Instrument,
    items: Sequence[Item],
    *,
    role: str,
    sentence: str,
    text: str | None = None,
    reference: str | None = None,
    generated_sentences: Sequence[str] = (),
    reference_sentences: Sequence[str] = (),
    language: str = "",
) -> str:
    """The user turn that asks `items` about one target, in the instrument's `language` (its
    default). The persona line and the answer instructions are radlay's; every question, scale
    label and option is the instrument's wording, as participants see it."""
    language = language or instrument.default_language
    lines = [
        f"You are a {role.replace('_', ' ')} taking part in a study "
        f'("{_text(instrument.title, language)}"). Answer each question as such a rater would.',
        "",
        f"Original radiology text: {sentence}",
    ]
    if text is not None:
        lines.append(f"Text to rate: {text}")
    if reference is not None:
        lines.append(f"Reference text: {reference}")
    if any(item.kind is ItemKind.SENTENCE_MATCHING for item in items):
        lines += ["", "Generated sentences:"]
        lines += [f"G{j}: {s}" for j, s in enumerate(generated_sentences)]
        lines += ["Reference sentences:"]
        lines += [f"R{i + 1}: {s}" for i, s in enumerate(reference_sentences)]
    lines += ["", "Questions:"]
    lines += [_describe(item, language) for item in items]
    shape = ", ".join(f'"{item.key}": {_example(item)}' for item in items)
    lines += [
        "",
        "Answer with one JSON object and nothing else, one field per question and an optional short "
        "justification:",
        "{" + shape + ', "justification": "<text>"}',
    ]
    return "\n".join(lines)


def parse_item_answer(
    items: Sequence[Item], text: str, *, generated: int = 0, references: int = 0
) -> dict[str, Any]:
    """The validated answer in `text`: {item key: its value as item_value_validate accepts it, in
    JSON form (`stored_value`)}, plus "justification" when given; AnswerError otherwise."""
    schema = answer_schema(items, generated=generated, references=references)
    data = parse_json_answer(text, Draft202012Validator(schema))
    answer: dict[str, Any] = {}
    for item in items:
        raw = data.get(item.key)
        if item.kind is ItemKind.SENTENCE_MATCHING and raw is not None:
            raw = {"generated_count": generated, "matches": raw}
        try:
            answer[item.key] = stored_value(item_value_validate(item, raw))
        except InvalidAnswer as exc:
            raise AnswerError("schema", str(exc)) from None
    if "justification" in data:
        answer["justification"] = data["justification"]
    return answer


def stored_value(value: Any) -> Any:
    """A validated value as JSON (sets as sorted lists, matches as their raw mapping)."""
    if isinstance(value, frozenset):
        return sorted(value)
    if hasattr(value, "matches") and hasattr(value, "generated_count"):
        return {"generated_count": value.generated_count, "matches": [sorted(row) for row in value.matches]}
    return value


def aggregate_item_samples(
    items: Sequence[Item], samples: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], dict[str, float | None], dict[str, Any]]:
    """(value per item, score per item, spread per item) of K answers in their stored JSON form
    (`stored_value`; module docstring): the modal value, the median score, the K coded values with
    their min and max."""
    if not samples:
        raise ValueError("no samples to aggregate")
    values: dict[str, Any] = {}
    scores: dict[str, float | None] = {}
    spread: dict[str, Any] = {}
    for item in items:
        stored = [sample.get(item.key) for sample in samples]
        counted = Counter(json.dumps(s, sort_keys=True) for s in stored)
        best = max(counted.values())
        values[item.key] = next(s for s in stored if counted[json.dumps(s, sort_keys=True)] == best)
        coded = [
            item_value_code(item, item_value_validate(item, s)) if s is not None else None for s in stored
        ]
        numbers = [c for c in coded if isinstance(c, float)]
        scores[item.key] = float(statistics.median(numbers)) if numbers else None
        if numbers:
            spread[item.key] = {"values": numbers, "min": min(numbers), "max": max(numbers)}
    return values, scores, spread
