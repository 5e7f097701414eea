"""A study's error-span answers as one row per marked span, the "spans" layout of the
instrument-item export (evaluation/exports/items.py): who marked it (a participant, or a judge run
as "judge <run>" with role "judge:<run>"), on which shown text (source, systems, simplification
ids), where (start, end: character offsets into the text the rater saw, end exclusive), the marked
text itself, its category and its severity.

A text a rater saw without marking anything is one row with `spans_on_text` 0 and empty span fields
(span_index, start, end, marked_text, category, severity): such texts count in every rate (spans per
text, the could-harm share), so an export that dropped them would overstate every rate.
`text_words` is the word count the per-100-words rates use (evaluation/analysis/error_spans.text_words)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from annotation.models import Simplification, SimplificationText, Study
from evaluation.analysis.item_raters import item_raters
from instruments.schema import Instrument, ItemKind

# Who answered which item on which source: the first columns of the span and suggestion layouts.
ANSWER_HEAD_COLUMNS = (
    "study",
    "participant",
    "role",
    "language",
    "instrument",
    "instrument_version",
    "item",
    "source",
)
SPAN_COLUMNS = (
    *ANSWER_HEAD_COLUMNS,
    "systems",
    "simplification_ids",
    "text_id",
    "text_words",
    "spans_on_text",
    "span_index",
    "start",
    "end",
    "marked_text",
    "category",
    "severity",
)


def span_items(instruments: Mapping[tuple[str, int], Instrument]) -> set[tuple[str, int, str]]:
    """(instrument key, version, item key) of every error-span item."""
    return {
        (key, version, item.key)
        for (key, version), instrument in instruments.items()
        for item in instrument.items
        if item.kind is ItemKind.ERROR_SPANS
    }


def _judge_rows(study: Study, spans: set[tuple[str, int, str]]) -> list[tuple[Any, ...]]:
    """The registered item raters' (judges') answers to error-span items, as (participant, role,
    language, key, version, item, source, text id, value)."""
    rows = []
    for frame in item_raters():
        answers = frame(study=study)
        for participant, role, language, key, version, item, source, text, value in answers[
            ["participant", "role", "language", "instrument", "version", "item", "source", "text_id", "value"]
        ].itertuples(index=False):
            if (key, int(version), item) in spans and text == text:  # NaN: an answer on the source
                rows.append((participant, role, language, key, int(version), item, source, int(text), value))
    return rows


def span_export_rows(
    *,
    study: Study,
    stored: Sequence[tuple[Any, ...]],
    instruments: Mapping[tuple[str, int], Instrument],
    head: Any,
) -> Iterator[tuple[Any, ...]]:
    """One row per span (SPAN_COLUMNS, after `head(row)`'s participant columns) of the humans'
    `stored` answers (evaluation/analysis/instrument_selectors.answer_rows) and then of the judges'."""
    spans = span_items(instruments)
    if not spans:
        return
    humans = [row for row in stored if (row[6], row[7], row[9]) in spans and row[12] is not None]
    judged = _judge_rows(study, spans)
    ids = {row[12] for row in humans} | {row[7] for row in judged}
    texts = dict(SimplificationText.objects.filter(pk__in=ids).values_list("pk", "text"))
    systems: dict[int, list[str]] = {}
    simplifications: dict[int, list[int]] = {}
    for text_id, pk, system in (
        Simplification.objects.filter(shown_text_id__in=ids)
        .order_by("system__position", "system__key")
        .values_list("shown_text_id", "pk", "system__key")
    ):
        systems.setdefault(text_id, []).append(system)
        simplifications.setdefault(text_id, []).append(pk)

    def target(key: str, version: int, item: str, source: str, text_id: int, value: Any):
        text = texts.get(text_id, "")
        marked = sorted(value or [], key=lambda s: (s["start"], s["end"], s["category"], s["severity"]))
        common = (
            key,
            version,
            item,
            source,
            ";".join(systems.get(text_id, [])),
            ";".join(map(str, simplifications.get(text_id, []))),
            text_id,
            len(text.split()),
            len(marked),
        )
        if not marked:
            yield (*common, None, None, None, "", "", "")
        for i, span in enumerate(marked):
            start, end = span["start"], span["end"]
            yield (*common, i, start, end, text[start:end], span["category"], span["severity"])

    for row in humans:
        for cells in target(row[6], row[7], row[9], row[10], row[12], row[14]):
            yield (*head(row), row[5], *cells)
    for participant, role, language, key, version, item, source, text_id, value in judged:
        for cells in target(key, version, item, source, text_id, value):
            yield (*head(None, participant=participant, role=role), language, *cells)
