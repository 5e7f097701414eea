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


class ImportFormatErrors(ImportFormatError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """Every problem found in one file, reported at once (a sources file's row errors up to a
    bound, a hospital export's bad resources or segments): the first one's file, row and column,
    and all of them in `problems` and in the message; `more` says the list stopped at the bound."""

    def __init__(self, problems: list[ImportFormatError], *, more: bool = False):
        self.problems = list(problems)
        self.more = more
        first = self.problems[0]
        super().__init__(first.detail, file=first.file, row=first.row, column=first.column)
        lines = [str(problem) for problem in self.problems]
        if more:
            lines.append(f"(and more: only the first {len(self.problems)} problems are listed)")
        self.args = ("\n".join(lines),)

    def __str__(self) -> str:
        return self.args[0]
