"""What one sources file may ask of the server: at most RADLAY_FILE_LIMITS.import_columns columns in its
header and RADLAY_FILE_LIMITS.import_systems systems (in the file, and in the study once it is imported).
Both are checked as the file is read, before anything is written, so a file past them is refused
in milliseconds with the limit and its setting named (docs/configuration.md)."""

from __future__ import annotations

from django.conf import settings

from studies.importers.errors import ImportFormatError


def max_columns() -> int:
    return int(settings.RADLAY_FILE_LIMITS.import_columns)


def max_systems() -> int:
    return int(settings.RADLAY_FILE_LIMITS.import_systems)


def columns_check(n_columns: int, *, file: str) -> None:
    """Refuse a header of more than RADLAY_FILE_LIMITS.import_columns columns (row 1)."""
    limit = max_columns()
    if n_columns > limit:
        raise ImportFormatError(
            f"the header has {n_columns:,} columns; at most {limit:,} are accepted "
            "(RADLAY_FILE_LIMITS.import_columns). A wide file has one column per system: split the systems "
            "over several files, or use the long format.",
            file=file,
            row=1,
        )


def systems_check(
    n_systems: int, *, file: str, row: int | None = None, column: str = "", study: str = ""
) -> None:
    """Refuse more than RADLAY_FILE_LIMITS.import_systems systems: in the file, or (`study` named) in the
    study once the file's new systems are added."""
    limit = max_systems()
    if n_systems > limit:
        where = f"study {study!r} would have" if study else "the file names"
        raise ImportFormatError(
            f"{where} {n_systems:,} systems; at most {limit:,} are accepted "
            "(RADLAY_FILE_LIMITS.import_systems).",
            file=file,
            row=row,
            column=column or None,
        )
