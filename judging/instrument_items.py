"""A judge that asks an instrument's items: the prompt and the JSON answer schema are
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
frequent answer (the first of equals), the spread lists the K coded values.

An error-span item is answered as a list of errors, each with the quoted words of the text
to rate (or its character offsets "start"/"end", end exclusive), a category and a severity of the
item's. A quote is aligned to offsets with measures.stats.span_agreement.align_quoted_spans (exact,
then ignoring case and spacing, then a close fuzzy match); when offsets and a quote are both given and
the offsets hold the quote, the offsets are kept (they tell repeated words apart). A quote found
nowhere, offsets outside the text, or an unknown category refuse the whole answer with the reason
(kind "unaligned" or "schema"): the model is asked again and, failing that, the item fails with the
reason recorded — a span is never dropped silently."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator

from instruments.answers import ErrorSpan, InvalidAnswer, item_value_code, item_value_validate
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
    if item.kind is ItemKind.ERROR_SPANS:
        span = {
            "type": "object",
            "properties": {
                "quote": {"type": "string"},
                "start": {"type": "integer", "minimum": 0},
                "end": {"type": "integer", "minimum": 1},
                "category": {"type": "string", "enum": [option.key for option in item.options]},
                "severity": {"type": "string", "enum": [option.key for option in item.severities]},
            },
            "required": ["category", "severity"],
            "anyOf": [{"required": ["quote"]}, {"required": ["start", "end"]}],
            "additionalProperties": False,
        }
        return {"type": "array", "items": span}
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
    if item.kind is ItemKind.ERROR_SPANS:
        categories = ", ".join(f'"{o.key}" - {_text(o.label, language)}' for o in item.options)
        severities = ", ".join(f'"{o.key}" - {_text(o.label, language)}' for o in item.severities)
        return (
            f"{head}\n  Answer a list with one entry per error in the text to rate: the exact words of "
            'the text that contain the error as "quote" (copied character for character), its '
            f'"category", one of: {categories}; and its "severity", one of: {severities}. '
            "Answer an empty list when the text has no error."
        )
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
    if item.kind is ItemKind.ERROR_SPANS:
        return '[{"quote": "<exact words>", "category": "<category>", "severity": "<severity>"}, …]'
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
    if any(item.kind is ItemKind.PAIRWISE for item in items):
        # Two texts compared: named A and B as the participants see them, in the order asked.
        lines += [f"Text A: {text}", f"Text B: {reference}"]
    else:
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


def judge_spans(item: Item, raw: Sequence[Mapping[str, Any]], shown: str) -> list[dict[str, Any]]:
    """A judge's errors (schema-checked: a quote or offsets, a category, a severity) as offsets into
    `shown`; AnswerError "unaligned" naming every quote found nowhere in the text."""
    # Imported here: judging.models imports this module in every web worker, and the span core
    # brings numpy (tests/test_web_imports.py).
    from measures.stats.span_agreement import align_quoted_spans

    quoted = [
        (i, span["quote"])
        for i, span in enumerate(raw)
        if "quote" in span
        and not ("start" in span and "end" in span and shown[span["start"] : span["end"]] == span["quote"])
    ]
    aligned, unmatched = align_quoted_spans(shown, [quote for _, quote in quoted])
    if unmatched:
        missing = "; ".join(f"errors[{quoted[index][0]}] {quote!r}" for index, quote in unmatched)
        raise AnswerError("unaligned", f"{item.key}: quoted text not found in the text to rate: {missing}")
    offsets = {quoted[a.index][0]: (a.start, a.end) for a in aligned}
    return [
        {
            "start": offsets.get(i, (span.get("start"), span.get("end")))[0],
            "end": offsets.get(i, (span.get("start"), span.get("end")))[1],
            "category": span["category"],
            "severity": span["severity"],
        }
        for i, span in enumerate(raw)
    ]


def parse_item_answer(
    items: Sequence[Item], text: str, *, generated: int = 0, references: int = 0, shown: str | None = None
) -> dict[str, Any]:
    """The validated answer in `text`: {item key: its value as item_value_validate accepts it, in
    JSON form (`stored_value`)}, plus "justification" when given; AnswerError otherwise. `shown`:
    the text to rate, which an error-span item's quotes and offsets refer to."""
    schema = answer_schema(items, generated=generated, references=references)
    data = parse_json_answer(text, Draft202012Validator(schema))
    answer: dict[str, Any] = {}
    for item in items:
        raw = data.get(item.key)
        if item.kind is ItemKind.SENTENCE_MATCHING and raw is not None:
            raw = {"generated_count": generated, "matches": raw}
        length = None
        if item.kind is ItemKind.ERROR_SPANS:
            if shown is None:
                raise AnswerError("schema", f"{item.key}: an error-span item needs the text to rate")
            raw, length = judge_spans(item, raw or [], shown), len(shown)
        try:
            answer[item.key] = stored_value(item_value_validate(item, raw, text_length=length))
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
    if isinstance(value, tuple) and all(isinstance(span, ErrorSpan) for span in value):
        return [
            {"start": s.start, "end": s.end, "category": s.category, "severity": s.severity}
            for s in sorted(value, key=lambda s: (s.start, s.end, s.category, s.severity))
        ]
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
            item_value_code(item, item_value_validate(item, s))
            if s is not None
            else (0.0 if item.kind is ItemKind.ERROR_SPANS else None)
            for s in stored
        ]
        numbers = [c for c in coded if isinstance(c, float)]
        scores[item.key] = float(statistics.median(numbers)) if numbers else None
        if numbers:
            spread[item.key] = {"values": numbers, "min": min(numbers), "max": max(numbers)}
    return values, scores, spread
