from __future__ import annotations


class ImportFormatError(Exception):
    """Malformed input. Names the file, the row (1-based, header = row 1 for CSV; line for JSONL)
    and the column, so the person importing can find and fix it."""

    def __init__(self, message: str, *, file: str, row: int | None = None, column: str | None = None):
        self.file, self.row, self.column, self.detail = file, row, column, message
        where = file
        if row is not None:
            where += f", row {row}"
        if column:
            where += f", column {column!r}"
        super().__init__(f"{where}: {message}")
