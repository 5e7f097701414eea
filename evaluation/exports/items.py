"""A study's instrument-item answers (ItemAnswer) as an export, in two layouts, written by the same
format modules as the raw answers (csv, xlsx, json):

* long — one row per answer: participant, role, the languages, instrument key and version, item,
  target ids, the stored value and its numeric score;
* wide — one row per participant × target (instrument version, source, shown text, reference), one
  column per item (`<instrument>.<item>`): the score for numeric items (ordinal code, count,
  matched proportion), the option key(s) for choices, the text for free text;
* spans — one row per marked span of the error-span items, the humans' and the judges'
  (evaluation/exports/spans.py; a text seen without marks is one row with empty span fields);
* final_labels — one row per item and target of the adjudicated items: the raters' values, the
  final label and where it came from (evaluation/exports/final_labels.py).

The answers are read in one query (evaluation/analysis/instrument_selectors.answer_rows), ordered so that a
wide row's answers are adjacent. `external_id` is added only when asked for and the user's role
allows identifying fields (annotation.access.may_see_identifying)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from annotation.models import Study
from annotation.selectors import participant_label, systems_by_text
from evaluation.analysis.instrument_selectors import answer_rows, study_instruments
from evaluation.exports.final_labels import FINAL_LABEL_COLUMNS, final_label_rows
from evaluation.exports.rows import flat_cell
from evaluation.exports.spans import SPAN_COLUMNS, span_export_rows
from evaluation.exports.suggestions import SUGGESTION_COLUMNS, suggestion_export_rows
from instruments.schema import Instrument, ItemKind

LAYOUTS = ("long", "wide", "spans", "suggestions", "final_labels")
LONG_COLUMNS = (
    "study",
    "participant",
    "role",
    "participant_language",
    "language",
    "instrument",
    "instrument_version",
    "item",
    "item_kind",
    "source",
    "systems",
    "text_id",
    "reference_text_id",
    "value",
    "score",
    "time_spent_ms",
    "created_at",
    "updated_at",
)
# A wide row names its target as the long rows do; its item columns follow.
WIDE_KEY_COLUMNS = tuple(
    c
    for c in LONG_COLUMNS
    if c not in ("item", "item_kind", "value", "score", "time_spent_ms", "created_at", "updated_at")
)
_NUMERIC = frozenset({ItemKind.ORDINAL, ItemKind.COUNT, ItemKind.SENTENCE_MATCHING, ItemKind.ERROR_SPANS})


class LayoutError(ValueError):
    """An unknown layout; the message names the parameter and the layouts offered."""


def _with_external_id(columns: Sequence[str], include_external_ids: bool) -> tuple[str, ...]:
    if not include_external_ids:
        return tuple(columns)
    return (*columns[:2], "external_id", *columns[2:])


def _time(value: datetime | None) -> str:
    return value.isoformat() if value else ""


def _wide_cell(kind: ItemKind | None, value: Any, score: float | None) -> Any:
    if kind in _NUMERIC:
        return score
    if isinstance(value, list):
        return ";".join(map(str, value))
    return flat_cell(value)


class ItemAnswerExport:
    """Iterate for the document's bytes in `file_format`; `columns` is its header."""

    def __init__(
        self, *, study: Study, file_format: str, layout: str = "long", include_external_ids: bool = False
    ) -> None:
        from evaluation.exports import FORMATS

        if layout not in LAYOUTS:
            raise LayoutError(f"layout: {layout!r} is not one of {', '.join(LAYOUTS)}")
        self.study = study
        self.layout = layout
        self.exporter = FORMATS[file_format]
        # JSON keeps values as typed (lists, the matches mapping); CSV and XLSX cells are text.
        self.flat = file_format != "json"
        self.include_external_ids = include_external_ids
        self.instruments = study_instruments(study=study)
        columns = {
            "long": LONG_COLUMNS,
            "spans": SPAN_COLUMNS,
            "suggestions": SUGGESTION_COLUMNS,
            "final_labels": FINAL_LABEL_COLUMNS,
        }.get(layout) or (*WIDE_KEY_COLUMNS, *self.item_columns())
        self.columns = _with_external_id(columns, include_external_ids and layout != "final_labels")

    def item_columns(self) -> list[str]:
        """`<instrument>.<item>` for every item of every instrument version, in instrument order."""
        seen: dict[str, None] = {}
        for key, version in sorted(self.instruments):
            for item in self.instruments[(key, version)].items:
                seen.setdefault(f"{key}.{item.key}")
        return list(seen)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.exporter.stream(self.rows(), self.columns))

    def rows(self) -> Iterator[tuple[Any, ...]]:
        if self.layout == "final_labels":
            # Raters blind and no participant column: external ids have nothing to add here.
            yield from final_label_rows(study=self.study, flat=self.flat)
            return
        stored = answer_rows(study=self.study)
        systems = {text: ";".join(keys) for text, keys in systems_by_text(study=self.study).items()}
        kinds = _kinds(self.instruments)
        if self.layout == "long":
            yield from self._long(stored, systems, kinds)
        elif self.layout == "spans":
            yield from span_export_rows(
                study=self.study, stored=stored, instruments=self.instruments, head=self._span_head
            )
        elif self.layout == "suggestions":
            yield from suggestion_export_rows(study=self.study, head=self._span_head)
        else:
            yield from self._wide(stored, systems, kinds)

    def _head(self, row: Sequence[Any], systems: Mapping[int, str]) -> list[Any]:
        (pk, pseudonym, external_id, role, participant_language, language, key, version, *_) = row
        head = [self.study.slug, participant_label(pseudonym, pk)]
        if self.include_external_ids:
            head.append(external_id)
        # A flow that recorded no language on the participant: the one the item was shown in.
        return [*head, role, participant_language or language, language, key, version]

    def _span_head(self, row: Sequence[Any] | None, *, participant: str = "", role: str = "") -> list[Any]:
        """study, participant, (external_id), role of a human's stored row or of a judge."""
        if row is not None:
            participant, role = participant_label(row[1], row[0]), row[3]
        head = [self.study.slug, participant]
        if self.include_external_ids:
            head.append(row[2] if row is not None else "")
        return [*head, role]

    def _long(
        self,
        stored: list[tuple[Any, ...]],
        systems: Mapping[int, str],
        kinds: Mapping[tuple[str, int, str], ItemKind],
    ) -> Iterator[tuple[Any, ...]]:
        for row in stored:
            (*_, key, version, _structure, item, source, _position, text, reference, value, score,
             spent, created, updated) = row  # fmt: skip
            kind = kinds.get((key, version, item))
            yield (
                *self._head(row, systems),
                item,
                kind.value if kind else "",
                source,
                systems.get(text, "") if text else "",
                text,
                reference,
                flat_cell(value) if self.flat else value,
                score,
                spent,
                _time(created),
                _time(updated),
            )

    def _wide(
        self,
        stored: list[tuple[Any, ...]],
        systems: Mapping[int, str],
        kinds: Mapping[tuple[str, int, str], ItemKind],
    ) -> Iterator[tuple[Any, ...]]:
        columns = self.item_columns()
        position = {name: i for i, name in enumerate(columns)}

        def target(row: Sequence[Any]) -> tuple[Any, ...]:
            # participant, instrument key and version, source, shown text, reference
            return (row[0], row[6], row[7], row[10], row[12], row[13])

        for _, group in itertools.groupby(stored, key=target):
            answers = list(group)
            first = answers[0]
            cells: list[Any] = [None] * len(columns)
            for row in answers:
                key, version, item, value, score = row[6], row[7], row[9], row[14], row[15]
                cells[position[f"{key}.{item}"]] = _wide_cell(kinds.get((key, version, item)), value, score)
            text = first[12]
            yield (
                *self._head(first, systems),
                first[10],
                systems.get(text, "") if text else "",
                text,
                first[13],
                *cells,
            )


def _kinds(instruments: Mapping[tuple[str, int], Instrument]) -> dict[tuple[str, int, str], ItemKind]:
    return {
        (key, version, item.key): item.kind
        for (key, version), instrument in instruments.items()
        for item in instrument.items
    }
