"""XLSX export with openpyxl's write-only mode (rows are written as they come, not kept).

An XLSX file is a zip archive whose directory is written last, so it cannot be sent before it is
complete: `stream` writes it to a temporary file first and then sends that file in chunks.

openpyxl turns any string that starts with `=` into a formula cell; text a spreadsheet would run
(evaluation/exports/cells.py) is written as a string cell instead, as typed. XML 1.0 cannot hold
control characters other than tab, LF and CR: they become U+FFFD here (the JSON export keeps them)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO

from evaluation.exports.cells import is_formula_like

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EXTENSION = "xlsx"
SHEET_ROWS = 1_048_576  # Excel's row limit per sheet: further rows go to the next sheet
_CHUNK = 1 << 16


def write(
    rows: Iterable[Sequence[Any]], columns: Sequence[str], out: BinaryIO, *, title: str = "answers"
) -> None:
    # openpyxl (with lxml and Pillow: ~0.3 s, ~30 MB) loads with the first XLSX export, not in every
    # web worker that imports the exporters' registry.
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
    from openpyxl.styles import Font

    def cell_of(value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, str) and ILLEGAL_CHARACTERS_RE.search(value):
            value = ILLEGAL_CHARACTERS_RE.sub("\ufffd", value)
        if is_formula_like(value):
            cell = WriteOnlyCell(sheet, value=value)
            cell.data_type = "s"
            return cell
        return value

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
        sheet.append([cell_of(value) for value in row])
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
