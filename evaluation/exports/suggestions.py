"""A study's AI-assisted error-span suggestions as one row per suggestion offered to a rater, the
"suggestions" layout of the instrument-item export: where it was, whether it was a judge's span or
a planted wrong one, and what the rater did with it (accepted, edited, deleted, pending). The
analysis of the same rows is `span_suggestions` (judging/span_assistance.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from annotation.models import ItemAnswer, Study
from annotation.selectors import counted_participants
from evaluation.exports.spans import ANSWER_HEAD_COLUMNS

SUGGESTION_COLUMNS = (
    *ANSWER_HEAD_COLUMNS,
    "text_id",
    "assisted",
    "suggestion",
    "origin",
    "start",
    "end",
    "suggested_text",
    "category",
    "severity",
    "fate",
)


def suggestion_export_rows(*, study: Study, head: Any) -> Iterator[tuple[Any, ...]]:
    """One row per suggestion (SUGGESTION_COLUMNS after `head(row)`'s participant columns, `row`
    being (participant pk, pseudonym, external id, role)) of every counted participant's answers."""
    answers = (
        ItemAnswer.objects.filter(counted_participants(path="participant__"), participant__study=study)
        .exclude(suggestions={})
        .order_by(
            "participant_id", "instrument__key", "instrument__version", "source__position", "shown_text_id"
        )
        .values_list(
            "participant_id",
            "participant__pseudonym",
            "participant__external_id",
            "participant__role",
            "language",
            "instrument__key",
            "instrument__version",
            "item_key",
            "source__key",
            "shown_text_id",
            "shown_text__text",
            "suggestions",
        )
    )
    for *who, language, key, version, item, source, text_id, text, offered in answers:
        for suggestion in (offered or {}).get("items", []):
            start, end = suggestion.get("start"), suggestion.get("end")
            marked = text[start:end] if text is not None and start is not None and end is not None else ""
            yield (
                *head(who),
                language,
                key,
                version,
                item,
                source,
                text_id,
                bool(offered.get("assisted", True)),
                suggestion.get("id", ""),
                suggestion.get("origin", ""),
                start,
                end,
                marked,
                suggestion.get("category", ""),
                suggestion.get("severity", ""),
                suggestion.get("fate", "pending"),
            )
