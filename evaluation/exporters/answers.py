"""Every raw answer of a study in one export format, as bytes: what the streamed download and
`manage.py export` send. CSV on PostgreSQL is written by the database (csv_copy.py); everything
else goes through `answer_rows` and the format's writer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from annotation.models import Study
from evaluation.exporters import FORMATS, csv_copy
from evaluation.exporters.rows import answer_columns, answer_rows


class AnswerExport:
    """Iterate for the document in chunks, or `write` it to a file; `rows` counts the answer rows
    produced so far."""

    def __init__(self, *, study: Study, file_format: str, include_external_ids: bool = False) -> None:
        self.study = study
        self.file_format = file_format
        self.include_external_ids = include_external_ids
        self.exporter = FORMATS[file_format]
        self.columns = answer_columns(include_external_ids=include_external_ids)
        self.rows = 0

    @property
    def by_database(self) -> bool:
        return self.file_format == "csv" and csv_copy.available()

    def __iter__(self) -> Iterator[bytes]:
        if self.by_database:
            return csv_copy.csv_copy_chunks(
                study=self.study, include_external_ids=self.include_external_ids, on_rows=self._count
            )
        return self.exporter.stream(self._rows(), self.columns)

    def write(self, out: BinaryIO) -> None:
        if self.by_database:
            for chunk in self:
                out.write(chunk)
        else:
            self.exporter.write(self._rows(), self.columns, out)

    def _count(self, n: int) -> None:
        self.rows += n

    def _rows(self) -> Iterator[tuple[Any, ...]]:
        for row in answer_rows(study=self.study, include_external_ids=self.include_external_ids):
            self.rows += 1
            yield row
