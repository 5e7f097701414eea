"""A study's sources and (optionally) simplifications from one file (README "Importing a study").

Wide CSV: `source_key, source_text[, reference_severity], <system key>, <system key>, …`
Long CSV or JSONL: one record per simplification with `source_key, source_text, system, text`
(and optional `reference_severity`). A file with only `source_key` and `source_text` imports
sources whose simplifications are generated later.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from annotation import scales
from annotation.importers.errors import ImportFormatError
from annotation.importers.records import SimplificationRecord, SourceRecord, StudyRecords

REQUIRED = ("source_key", "source_text")
LONG_COLUMNS = ("system", "text")
OPTIONAL = ("reference_severity",)
SYSTEM_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,59}$")


def severity_level(value: str, *, file: str, row: int, column: str) -> str | None:
    """Map a severity cell to its level name (case-insensitive); empty → None."""
    value = (value or "").strip()
    if not value:
        return None
    for name in scales.SEVERITY.names:
        if value.lower() == name.lower():
            return name
    raise ImportFormatError(
        f"{value!r} is not a severity level (one of {', '.join(scales.SEVERITY.names)}).",
        file=file,
        row=row,
        column=column,
    )


def read_study_file(path: Path) -> StudyRecords:
    name = path.name
    try:
        raw = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text ({exc}).", file=name) from None
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        return _read_jsonl(raw, name)
    if path.suffix.lower() == ".csv":
        return _read_csv(raw, name)
    raise ImportFormatError("unknown format: use .csv (wide or long) or .jsonl.", file=name)


def _read_csv(raw: str, name: str) -> StudyRecords:
    reader = csv.reader(io.StringIO(raw, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ImportFormatError("the file is empty.", file=name) from None
    for column in REQUIRED:
        if column not in header:
            raise ImportFormatError(f"missing required column {column!r}.", file=name, row=1, column=column)
    duplicates = {h for h in header if header.count(h) > 1}
    if duplicates:
        raise ImportFormatError(f"duplicate column(s) {sorted(duplicates)}.", file=name, row=1)
    rows = []
    for number, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise ImportFormatError(
                f"{len(cells)} cells but the header has {len(header)} columns.", file=name, row=number
            )
        rows.append((number, dict(zip(header, cells, strict=True))))
    if all(c in header for c in LONG_COLUMNS):
        return _collect_long(rows, name)
    systems = [h for h in header if h not in REQUIRED + OPTIONAL]
    for system in systems:
        if not SYSTEM_KEY.match(system):
            raise ImportFormatError(
                f"system column {system!r} is not a valid system key (lowercase letters, digits, _ or -).",
                file=name,
                row=1,
                column=system,
            )
    records = StudyRecords(systems=systems)
    seen: set[str] = set()
    for number, row in rows:
        source = _source(row, name, number)
        if source.key in seen:
            raise ImportFormatError(
                f"source_key {source.key!r} appears twice.", file=name, row=number, column="source_key"
            )
        seen.add(source.key)
        records.sources.append(source)
        for system in systems:
            text = row[system].strip()
            if text:
                records.simplifications.append(SimplificationRecord(source.key, system, text))
    return records


def _read_jsonl(raw: str, name: str) -> StudyRecords:
    rows = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"not valid JSON ({exc.msg}).", file=name, row=number) from None
        if not isinstance(obj, dict):
            raise ImportFormatError("each line must be a JSON object.", file=name, row=number)
        for column in REQUIRED:
            if not isinstance(obj.get(column), str):
                raise ImportFormatError(
                    f"missing or non-text {column!r}.", file=name, row=number, column=column
                )
        rows.append(
            (number, {k: v if isinstance(v, str) else ("" if v is None else str(v)) for k, v in obj.items()})
        )
    if not rows:
        raise ImportFormatError("the file is empty.", file=name)
    return _collect_long(rows, name)


def _source(row: dict[str, str], name: str, number: int) -> SourceRecord:
    key, text = row["source_key"].strip(), row["source_text"].strip()
    if not key:
        raise ImportFormatError("empty source_key.", file=name, row=number, column="source_key")
    if not text:
        raise ImportFormatError("empty source_text.", file=name, row=number, column="source_text")
    severity = severity_level(
        row.get("reference_severity", ""), file=name, row=number, column="reference_severity"
    )
    return SourceRecord(key=key, text=text, reference_severity=severity)


def _collect_long(rows: list[tuple[int, dict[str, str]]], name: str) -> StudyRecords:
    records = StudyRecords()
    sources: dict[str, SourceRecord] = {}
    pairs: set[tuple[str, str]] = set()
    for number, row in rows:
        source = _source(row, name, number)
        known = sources.get(source.key)
        if known is None:
            sources[source.key] = source
            records.sources.append(source)
        else:
            if known.text != source.text:
                raise ImportFormatError(
                    f"source {source.key!r} has a different source_text than on an earlier row.",
                    file=name,
                    row=number,
                    column="source_text",
                )
            if source.reference_severity and known.reference_severity not in (
                None,
                source.reference_severity,
            ):
                raise ImportFormatError(
                    f"source {source.key!r} has a different reference_severity than on an earlier row.",
                    file=name,
                    row=number,
                    column="reference_severity",
                )
            known.reference_severity = known.reference_severity or source.reference_severity
        system = (row.get("system") or "").strip()
        text = (row.get("text") or "").strip()
        if not system and not text:
            continue
        if not SYSTEM_KEY.match(system):
            raise ImportFormatError(
                f"{system!r} is not a valid system key.", file=name, row=number, column="system"
            )
        if not text:
            raise ImportFormatError("empty text.", file=name, row=number, column="text")
        if (source.key, system) in pairs:
            raise ImportFormatError(
                f"a second simplification for source {source.key!r} and system {system!r}.",
                file=name,
                row=number,
                column="system",
            )
        pairs.add((source.key, system))
        if system not in records.systems:
            records.systems.append(system)
        records.simplifications.append(SimplificationRecord(source.key, system, text))
    return records
