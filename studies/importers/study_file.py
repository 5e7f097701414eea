"""A study's sources and (optionally) simplifications from one file (README "Running a study").

Wide CSV: `source_key, source_text[, reference_severity], <system key>, <system key>, …`
Long CSV or JSONL: one record per simplification with `source_key, source_text, system, text`
(and optional `reference_severity`). A file with only `source_key` and `source_text` imports
sources whose simplifications are generated later.

The file is streamed, never read whole: `StudyFile.check()` reads it once and validates every row
and every rule across rows (a source key seen twice with different texts, a pair given twice),
keeping only keys and digests; `StudyFile.rows()` reads it again and yields the records for the
writer. So a malformed file fails before anything is written, and memory does not grow with the
texts of a large file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.validators import validate_slug
from django.db.models import Field, Model

from annotation import scales
from annotation.models import Source, Study
from studies.importers.errors import ImportFormatError, ImportFormatErrors
from studies.importers.import_limits import columns_check, max_systems, systems_check
from studies.importers.records import SimplificationRecord, SourceRecord, StudyRecords

REQUIRED = ("source_key", "source_text")
LONG_COLUMNS = ("system", "text")
OPTIONAL = ("reference_severity",)
SYSTEM_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,59}$")
# The csv module's own field limit: a longer cell is refused with its column, the same for JSONL.
MAX_CELL = 131_072


def _max_length(model: type[Model], name: str) -> int:
    field = model._meta.get_field(name)
    longest = field.max_length if isinstance(field, Field) else None
    if longest is None:
        raise ImproperlyConfigured(f"{model.__name__}.{name} declares no max_length")
    return longest


MAX_KEY = _max_length(Source, "key")
MAX_SLUG = _max_length(Study, "slug")
PROGRESS_EVERY = 500
# The most row errors one check lists (a file of 100,000 bad rows is refused with these).
MAX_REPORTED_ERRORS = 100


def study_slug_check(slug: str) -> str:
    """The slug a study is imported into, or ImportFormatError naming `--study`."""
    problem = ""
    if not slug:
        problem = "is empty"
    elif len(slug) > MAX_SLUG:
        problem = f"is {len(slug)} characters long (at most {MAX_SLUG})"
    else:
        try:
            validate_slug(slug)
        except Exception:  # noqa: BLE001 - ValidationError; its message is the one below
            problem = "may contain only letters, digits, hyphens and underscores"
    if problem:
        raise ImportFormatError(f"the study slug {slug!r} {problem}.", file="--study")
    return slug


SEVERITY_BY_LOWER = {name.lower(): name for name in scales.SEVERITY.names}


def severity_level(value: str, *, file: str, row: int, column: str) -> str | None:
    """Map a severity cell to its level name (case-insensitive); empty → None."""
    value = (value or "").strip()
    if not value:
        return None
    name = SEVERITY_BY_LOWER.get(value.lower())
    if name is not None:
        return name
    raise ImportFormatError(
        f"{value!r} is not a severity level (one of {', '.join(scales.SEVERITY.names)}).",
        file=file,
        row=row,
        column=column,
    )


@dataclass
class StudyFileRow:
    """What one row of the file gives: its source and the simplifications on that row."""

    number: int
    source: SourceRecord
    simplifications: list[SimplificationRecord] = field(default_factory=list)


@dataclass
class StudyFileSummary:
    systems: list[str]
    sources: int
    simplifications: int
    # Long files may give a source's severity on a later row only: the merged value per key.
    severities: dict[str, str]


class StudyFile:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.name = self.path.name
        suffix = self.path.suffix.lower()
        if suffix in {".jsonl", ".ndjson"}:
            self.kind = "jsonl"
        elif suffix == ".csv":
            self.kind = "csv"
        else:
            raise ImportFormatError("unknown format: use .csv (wide or long) or .jsonl.", file=self.name)
        # How far the reading got, for a progress bar (the browser upload's task reads them from
        # its heartbeat thread): the pass (1: `check`, 2: the writer's `rows`), the row and the
        # bytes read, updated every PROGRESS_EVERY rows.
        self.passes = 0
        self.row_number = 0
        self.bytes_read = 0
        self.size = self.path.stat().st_size if self.path.exists() else 0
        # While `check` runs: the row errors found so far (a row at fault is reported and the
        # check goes on with the next); None: the first error is raised (the writer's pass).
        self._found: list[ImportFormatError] | None = None

    def check(self) -> StudyFileSummary:
        """Validate the whole file (first pass)."""
        systems: dict[str, None] = {}
        digests: dict[str, bytes] = {}
        severities: dict[str, str] = {}
        pairs: dict[tuple[str, str], int] = {}
        first_row: dict[str, int] = {}
        self._found = []
        try:
            summary = self._check(systems, digests, severities, pairs, first_row)
        finally:
            found, self._found = self._found, None
        if found:
            raise ImportFormatErrors(found)
        return summary

    def _note(self, error: ImportFormatError) -> None:
        """Report a row error: kept while checking (raised with the others at the end), else
        raised now."""
        if self._found is None:
            raise error
        self._found.append(error)
        if len(self._found) >= MAX_REPORTED_ERRORS:
            found, self._found = self._found, None
            raise ImportFormatErrors(found, more=True)

    def _check(self, systems, digests, severities, pairs, first_row) -> StudyFileSummary:
        n_simplifications = 0
        for row in self.rows():
            source = row.source
            digest = hashlib.blake2b(source.text.encode(), digest_size=16).digest()
            known = digests.get(source.key)
            if known is None:
                digests[source.key] = digest
                first_row[source.key] = row.number
            elif self.long:
                if known != digest:
                    self._note(
                        ImportFormatError(
                            f"source {source.key!r} has a different source_text than on row "
                            f"{first_row[source.key]}.",
                            file=self.name,
                            row=row.number,
                            column="source_text",
                        )
                    )
            else:
                self._note(
                    ImportFormatError(
                        f"source_key {source.key!r} appears twice: rows {first_row[source.key]} and "
                        f"{row.number}.",
                        file=self.name,
                        row=row.number,
                        column="source_key",
                    )
                )
                continue
            if source.reference_severity:
                earlier = severities.setdefault(source.key, source.reference_severity)
                if earlier != source.reference_severity:
                    self._note(
                        ImportFormatError(
                            f"source {source.key!r} has a different reference_severity than on an "
                            "earlier row.",
                            file=self.name,
                            row=row.number,
                            column="reference_severity",
                        )
                    )
            for record in row.simplifications:
                if self.long and (source.key, record.system) in pairs:
                    self._note(
                        ImportFormatError(
                            f"a second simplification for source {source.key!r} and system "
                            f"{record.system!r}: rows {pairs[(source.key, record.system)]} and "
                            f"{row.number}.",
                            file=self.name,
                            row=row.number,
                            column="system",
                        )
                    )
                    continue
                pairs[(source.key, record.system)] = row.number
                if record.system not in systems and len(systems) >= max_systems():
                    systems_check(len(systems) + 1, file=self.name, row=row.number, column="system")
                systems.setdefault(record.system)
                n_simplifications += 1
        if not self.long:
            systems = dict.fromkeys(self.header_systems)
        return StudyFileSummary(
            systems=list(systems),
            sources=len(digests),
            simplifications=n_simplifications,
            severities=severities,
        )

    def rows(self) -> Iterator[StudyFileRow]:
        """Every row's records, validated one row at a time (cross-row rules are `check`'s)."""
        self.passes += 1
        self.row_number = self.bytes_read = 0
        if self.kind == "jsonl":
            yield from self._jsonl_rows()
        else:
            yield from self._csv_rows()

    # --- CSV ------------------------------------------------------------------------------------

    def _csv_rows(self) -> Iterator[StudyFileRow]:
        with self._open() as handle:
            reader = csv.reader(handle)
            cells_of = self._csv_cells(reader)
            try:
                _, header = next(cells_of)
            except StopIteration:
                raise ImportFormatError("the file is empty.", file=self.name) from None
            header = [h.strip() for h in header]
            self._check_header(header)
            for number, cells in cells_of:
                # The whole row tested at once; the cell at fault is looked for only when it fails.
                joined = "".join(cells)
                if not joined.strip():
                    continue
                try:
                    if len(cells) != len(header):
                        raise ImportFormatError(
                            f"{len(cells)} cells but the header has {len(header)} columns.",
                            file=self.name,
                            row=number,
                        )
                    if "\x00" in joined or len(joined) > MAX_CELL:
                        for column, value in zip(header, cells, strict=True):
                            self._check_cell(value, number, column)
                    self._progress(number)
                    parsed = self._row(dict(zip(header, cells, strict=True)), number)
                except ImportFormatError as exc:
                    self._note(exc)  # while checking: reported with the others, and on to the next row
                    continue
                yield parsed

    def _csv_cells(self, reader) -> Iterator[tuple[int, list[str]]]:
        """(first line of the record, cells); the csv module's and the decoder's errors with it."""
        while True:
            number = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                detail = str(exc)
                if "field larger than field limit" in detail:
                    detail = f"a cell is longer than {MAX_CELL:,} characters"
                raise ImportFormatError(f"{detail}.", file=self.name, row=number) from None
            except UnicodeDecodeError as exc:
                raise ImportFormatError(f"not UTF-8 text ({exc}).", file=self.name, row=number) from None
            yield number, cells

    def _check_header(self, header: list[str]) -> None:
        columns_check(len(header), file=self.name)
        for column in REQUIRED:
            if column not in header:
                # radlay's own answer export names its columns study, participant, source, ...: it
                # holds answers, not a study to import.
                hint = (
                    " This looks like radlay's answer export, which import_study does not read: to move"
                    " a study with its answers, use export_study_archive and import_study_archive."
                    if {"study", "participant", "source"} <= set(header)
                    else ""
                )
                raise ImportFormatError(
                    f"missing required column {column!r}.{hint}", file=self.name, row=1, column=column
                )
        duplicates = {h for h, n in Counter(header).items() if n > 1}
        if duplicates:
            raise ImportFormatError(f"duplicate column(s) {sorted(duplicates)}.", file=self.name, row=1)
        self.long = all(c in header for c in LONG_COLUMNS)
        self.header_systems = [] if self.long else [h for h in header if h not in REQUIRED + OPTIONAL]
        systems_check(len(self.header_systems), file=self.name, row=1)
        for system in self.header_systems:
            if not SYSTEM_KEY.match(system):
                raise ImportFormatError(
                    f"system column {system!r} is not a valid system key "
                    "(lowercase letters, digits, _ or -).",
                    file=self.name,
                    row=1,
                    column=system,
                )

    # --- JSONL ----------------------------------------------------------------------------------

    def _jsonl_rows(self) -> Iterator[StudyFileRow]:
        self.long, self.header_systems = True, []
        seen_any = False
        with self._open() as handle:
            number = 0
            while True:
                try:
                    line = handle.readline()
                except UnicodeDecodeError as exc:
                    raise ImportFormatError(
                        f"not UTF-8 text ({exc}).", file=self.name, row=number + 1
                    ) from None
                if not line:
                    break
                number += 1
                if not line.strip():
                    continue
                seen_any = True
                try:
                    parsed = self._jsonl_row(line, number)
                except ImportFormatError as exc:
                    self._note(exc)  # while checking: reported with the others, and on to the next line
                    continue
                self._progress(number)
                yield parsed
        if not seen_any:
            raise ImportFormatError("the file is empty.", file=self.name)

    def _jsonl_row(self, line: str, number: int) -> StudyFileRow:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"not valid JSON ({exc.msg}).", file=self.name, row=number) from None
        if not isinstance(obj, dict):
            raise ImportFormatError("each line must be a JSON object.", file=self.name, row=number)
        row: dict[str, str] = {}
        for column in (*REQUIRED, *OPTIONAL, *LONG_COLUMNS):
            value = obj.get(column)
            if value is None and column not in REQUIRED:
                value = ""
            if not isinstance(value, str):
                raise ImportFormatError(
                    f"missing {column!r}."
                    if value is None
                    else f"{column!r} must be text, not {_json_type(value)}.",
                    file=self.name,
                    row=number,
                    column=column,
                )
            self._check_cell(value, number, column)
            row[column] = value
        return self._row(row, number)

    # --- both -----------------------------------------------------------------------------------

    def _open(self):
        # utf-8-sig drops a BOM; decoding errors surface while reading, with the row they are on.
        # The binary file underneath tells how many bytes were read (text files cannot while
        # iterated).
        self._binary = self.path.open("rb")
        return io.TextIOWrapper(self._binary, encoding="utf-8-sig", newline="")

    def _progress(self, number: int) -> None:
        if number % PROGRESS_EVERY == 0:
            self.row_number = number
            self.bytes_read = self._binary.tell()

    def _check_cell(self, value: str, number: int, column: str) -> None:
        if "\x00" in value:
            raise ImportFormatError("contains a NUL byte.", file=self.name, row=number, column=column)
        if len(value) > MAX_CELL:
            raise ImportFormatError(
                f"{len(value):,} characters (at most {MAX_CELL:,}).",
                file=self.name,
                row=number,
                column=column,
            )

    def _row(self, row: dict[str, str], number: int) -> StudyFileRow:
        key, text = row["source_key"].strip(), row["source_text"].strip()
        if not key:
            raise ImportFormatError("empty source_key.", file=self.name, row=number, column="source_key")
        if len(key) > MAX_KEY:
            raise ImportFormatError(
                f"source_key is {len(key)} characters long (at most {MAX_KEY}).",
                file=self.name,
                row=number,
                column="source_key",
            )
        if not text:
            raise ImportFormatError("empty source_text.", file=self.name, row=number, column="source_text")
        severity = severity_level(
            row.get("reference_severity", ""), file=self.name, row=number, column="reference_severity"
        )
        result = StudyFileRow(number, SourceRecord(key=key, text=text, reference_severity=severity))
        if not self.long:
            for system in self.header_systems:
                simplification = row[system].strip()
                if simplification:
                    result.simplifications.append(SimplificationRecord(key, system, simplification))
            return result
        system, simplification = row.get("system", "").strip(), row.get("text", "").strip()
        if not system and not simplification:
            return result
        if not SYSTEM_KEY.match(system):
            raise ImportFormatError(
                f"{system!r} is not a valid system key.", file=self.name, row=number, column="system"
            )
        if not simplification:
            raise ImportFormatError("empty text.", file=self.name, row=number, column="text")
        result.simplifications.append(SimplificationRecord(key, system, simplification))
        return result


def read_study_file(path: Path) -> StudyRecords:
    """The whole file as records, validated (for small files such as the demo's)."""
    study_file = StudyFile(path)
    summary = study_file.check()
    records = StudyRecords(systems=summary.systems)
    seen: set[str] = set()
    for row in study_file.rows():
        if row.source.key not in seen:
            seen.add(row.source.key)
            row.source.reference_severity = summary.severities.get(row.source.key)
            records.sources.append(row.source)
        records.simplifications.extend(row.simplifications)
    return records


def _json_type(value: object) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
