"""Every raw answer of a study, of every flow, in one export format, as bytes: what the streamed
download and `manage.py export` send. The rows are evaluation/exports/study_answers.py's: the protocol's
typed tables, then the instrument items' and planted controls' answers. CSV on PostgreSQL has the
protocol's rows written by the database (csv_copy.py) and the others appended by the Python path;
everything else goes through `study_answer_rows` and the format's writer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from annotation.models import Study
from evaluation.exports import FORMATS, csv_copy
from evaluation.exports.csv import csv_chunks
from evaluation.exports.rows import answer_columns
from evaluation.exports.study_answers import item_answer_rows, study_answer_rows


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
            return self._by_database()
        return self.exporter.stream(self._rows(), self.columns)

    def _by_database(self) -> Iterator[bytes]:
        yield from csv_copy.csv_copy_chunks(
            study=self.study, include_external_ids=self.include_external_ids, on_rows=self._count
        )
        # The instrument items' and controls' rows after the protocol's, as the Python path writes
        # them (the header is the COPY path's).
        header = b"".join(csv_chunks((), self.columns))
        rows = item_answer_rows(study=self.study, include_external_ids=self.include_external_ids)
        for n, chunk in enumerate(csv_chunks(self._counted(rows), self.columns)):
            chunk = chunk[len(header) :] if n == 0 else chunk
            if chunk:
                yield chunk

    def write(self, out: BinaryIO) -> None:
        if self.by_database:
            for chunk in self:
                out.write(chunk)
        else:
            self.exporter.write(self._rows(), self.columns, out)

    def _count(self, n: int) -> None:
        self.rows += n

    def _rows(self) -> Iterator[tuple[Any, ...]]:
        return self._counted(
            study_answer_rows(study=self.study, include_external_ids=self.include_external_ids)
        )

    def _counted(self, rows: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        for row in rows:
            self.rows += 1
            yield row
