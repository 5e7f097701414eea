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


class ImportFormatErrors(ImportFormatError):
    """Several problems found in one file (a hospital export is checked whole, so that every bad
    resource or segment is named at once); `problems` holds each as an ImportFormatError."""

    def __init__(self, problems: list[ImportFormatError]):
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(first.detail + more, file=first.file, row=first.row, column=first.column)

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)
