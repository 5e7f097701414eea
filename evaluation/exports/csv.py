"""CSV export: rows streamed as text chunks (RFC 4180 quoting, UTF-8, header first). Text that a
spreadsheet would run as a formula is prefixed with `'` (evaluation/exports/cells.py)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, BinaryIO

from evaluation.exports.cells import csv_row

CONTENT_TYPE = "text/csv; charset=utf-8"
EXTENSION = "csv"
_BATCH = 1000


def csv_chunks(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[bytes]:
    """The CSV document in chunks of `_BATCH` rows, never holding more than one chunk."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(columns)
    rows = iter(rows)
    while batch := list(islice(rows, _BATCH)):
        writer.writerows(map(csv_row, batch))
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def write(rows: Iterable[Sequence[Any]], columns: Sequence[str], out: BinaryIO) -> None:
    for chunk in csv_chunks(rows, columns):
        out.write(chunk)


def stream(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[bytes]:
    return csv_chunks(rows, columns)
