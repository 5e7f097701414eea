"""XLSX export with openpyxl's write-only mode (rows are written as they come, not kept).

An XLSX file is a zip archive whose directory is written last, so it cannot be sent before it is
complete: `stream` writes it to a temporary file first and then sends that file in chunks."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EXTENSION = "xlsx"
SHEET_ROWS = 1_048_576  # Excel's row limit per sheet: further rows go to the next sheet
_CHUNK = 1 << 16


def write(
    rows: Iterable[Sequence[Any]], columns: Sequence[str], out: BinaryIO, *, title: str = "answers"
) -> None:
    workbook = Workbook(write_only=True)
    sheet = None
    used = SHEET_ROWS
    for row in rows:
        if used >= SHEET_ROWS:
            sheet = workbook.create_sheet(
                title if sheet is None else f"{title}_{len(workbook.sheetnames) + 1}"
            )
            header = []
            for name in columns:
                cell = WriteOnlyCell(sheet, value=name)
                cell.font = Font(bold=True)
                header.append(cell)
            sheet.append(header)
            used = 1
        sheet.append(["" if value is None else value for value in row])
        used += 1
    if sheet is None:
        workbook.create_sheet(title).append(list(columns))
    workbook.save(out)


def stream(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[bytes]:
    with tempfile.TemporaryFile() as handle:
        write(rows, columns, handle)
        handle.seek(0)
        while chunk := handle.read(_CHUNK):
            yield chunk
