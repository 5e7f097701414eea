"""The protocol's answers in the wide layout: one row per stored answer (a lay panel, a
radiologist's rating of one text, a judgement of one source, a panel-3 choice, an attention check,
a participant's background answers), one column per question, the value as the long export writes
it. Read through evaluation/exports/study_answers.py (the protocol's sections only: the instrument items'
wide layout is the item export's). Two passes over the rows: the first finds the questions that
have columns of their own per study (attention checks, background questions)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from annotation.models import Study
from evaluation.exports.rows import SECTIONS, answer_columns
from evaluation.exports.study_answers import answer_rows_of
from evaluation.selectors import EXPERT_ASPECTS, LAY_QUESTIONS

FIXED_QUESTIONS = (
    *LAY_QUESTIONS,
    "most_preferred",
    "least_preferred",
    "most_justification",
    "least_justification",
    *EXPERT_ASPECTS,
    "severity",
    "original_simplicity",
    "comment",
)
_SPREAD = ("question", "value", "value_number")


class ProtocolWideExport:
    """Iterate for the document's bytes in `file_format`; `columns` is its header."""

    def __init__(self, *, study: Study, file_format: str, include_external_ids: bool = False) -> None:
        from evaluation.exports import FORMATS

        self.study = study
        self.exporter = FORMATS[file_format]
        self.include_external_ids = include_external_ids
        long_columns = answer_columns(include_external_ids=include_external_ids)
        self.at = {name: long_columns.index(name) for name in _SPREAD}
        self.keep = [i for i, name in enumerate(long_columns) if name not in _SPREAD]
        extra: dict[str, None] = {}
        for row in self._long():
            question = row[self.at["question"]]
            if question not in FIXED_QUESTIONS:
                extra.setdefault(question)
        self.questions = (*FIXED_QUESTIONS, *extra)
        self.columns = (*(long_columns[i] for i in self.keep), *self.questions)

    def _long(self) -> Iterator[tuple[Any, ...]]:
        return answer_rows_of(
            study=self.study, sections=SECTIONS, include_external_ids=self.include_external_ids
        )

    def rows(self) -> Iterator[tuple[Any, ...]]:
        position = {name: i for i, name in enumerate(self.questions)}
        key: tuple[Any, ...] | None = None
        cells: list[Any] = []
        for row in self._long():
            this = tuple(row[i] for i in self.keep)
            if this != key:
                if key is not None:
                    yield (*key, *cells)
                key, cells = this, [None] * len(self.questions)
            cells[position[row[self.at["question"]]]] = row[self.at["value"]]
        if key is not None:
            yield (*key, *cells)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.exporter.stream(self.rows(), self.columns))
