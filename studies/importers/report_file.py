"""Whole reports from a hospital export as a study's sources, read through the same interface as
a CSV/JSONL study file (`check()` then `rows()`), so that `manage.py import_study` and the
console upload write them with the one writer (studies/importers/write.py) and whatever it
applies on import.

A report becomes one source, or (`split_sentences`) one source per sentence, split by
`measures.metrics.sentences.split_sentences`; each such source keeps its report's key in
`Source.report_key`. Keys are keyed hashes of what identifies the report in its system
(studies/importers/clinical_report.py), never an MRN or accession number.

`study_file_open(path)` picks the reader for a file: .json (a FHIR Bundle or DiagnosticReport),
.hl7 (ORU^R01 messages), .ndjson/.jsonl (FHIR resources when the first line is one, radlay's long
JSONL otherwise), .csv."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from measures.metrics.sentences import split_sentences as sentences_of
from studies.importers.clinical_report import ClinicalReport, report_source_key
from studies.importers.errors import ImportFormatError, ImportFormatErrors
from studies.importers.records import SourceRecord
from studies.importers.study_file import MAX_CELL, StudyFile, StudyFileRow, StudyFileSummary

REPORT_SUFFIXES = (".json", ".hl7")
SUFFIXES = (".csv", ".jsonl", ".ndjson", *REPORT_SUFFIXES)


def study_file_open(path: Path, *, split_sentences: bool = False) -> StudyFile | ReportFile:
    """The reader for `path`: a hospital export (FHIR, HL7 v2) or a CSV/JSONL study file.
    `split_sentences` applies to reports only; a CSV/JSONL file with it is refused."""
    path = Path(path)
    suffix = path.suffix.lower()
    kind = ""
    if suffix == ".json":
        kind = "fhir"
    elif suffix == ".hl7":
        kind = "hl7"
    elif suffix in {".ndjson", ".jsonl"} and looks_like_fhir(_first_line(path)):
        kind = "fhir-ndjson"
    elif suffix == ".txt" and path.exists() and looks_like_hl7(path.read_bytes()[:16]):
        kind = "hl7"
    if kind:
        return ReportFile(path, kind=kind, split_sentences=split_sentences)
    if split_sentences:
        raise ImportFormatError(
            "splitting into sentences applies to FHIR and HL7 reports; a CSV/JSONL file gives its sentences.",
            file=path.name,
        )
    return StudyFile(path)


def looks_like_fhir(first_line: str) -> bool:
    """Whether an NDJSON file's first record is a FHIR resource (rather than a radlay JSONL row)."""
    try:
        obj = json.loads(first_line)
    except json.JSONDecodeError:
        return False
    return isinstance(obj, dict) and "resourceType" in obj


def looks_like_hl7(data: bytes) -> bool:
    return data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"MSH")


def _first_line(path: Path) -> str:
    if not path.exists():
        return ""
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                return raw.decode("utf-8-sig", errors="replace")
    return ""


class ReportFile:
    """A hospital export read whole (a Bundle is one JSON document; reports are few and small
    beside a CSV of sentences), validated before anything is written: every bad resource or
    segment is named in one ImportFormatErrors."""

    def __init__(self, path: Path, *, kind: str, split_sentences: bool = False):
        self.path = Path(path)
        self.name = self.path.name
        self.kind = kind
        self.split_sentences = split_sentences
        self.size = self.path.stat().st_size if self.path.exists() else 0
        self.passes = self.row_number = self.bytes_read = 0
        self._records: list[tuple[int, SourceRecord]] | None = None

    def check(self) -> StudyFileSummary:
        records = self._read()
        return StudyFileSummary(systems=[], sources=len(records), simplifications=0, severities={})

    def rows(self) -> Iterator[StudyFileRow]:
        self.passes += 1
        for row, record in self._read():
            self.row_number = row
            yield StudyFileRow(row, record)
        self.bytes_read = self.size

    def _read(self) -> list[tuple[int, SourceRecord]]:
        if self._records is None:
            self._records = self._sources(self._reports())
            self.bytes_read = self.size
        return self._records

    def _reports(self) -> list[ClinicalReport]:
        # fhir.resources (pydantic models of every resource) and hl7apy load here, in the import
        # task or command, not in every web worker that imports the upload page.
        from studies.importers.fhir_reports import fhir_reports_read
        from studies.importers.hl7_reports import hl7_reports_read

        data = self.path.read_bytes()
        if self.kind == "hl7":
            return hl7_reports_read(data, name=self.name)
        return fhir_reports_read(data, name=self.name, ndjson=self.kind == "fhir-ndjson")

    def _sources(self, reports: list[ClinicalReport]) -> list[tuple[int, SourceRecord]]:
        problems: list[ImportFormatError] = []
        seen: dict[str, int] = {}
        records: list[tuple[int, SourceRecord]] = []
        for report in reports:
            key = report_source_key(report.identity)
            if key in seen:
                problems.append(
                    ImportFormatError(
                        f"the same report as at {seen[key]} (same identifier): give it once.",
                        file=self.name,
                        row=report.row,
                    )
                )
                continue
            seen[key] = report.row
            if len(report.text) > MAX_CELL:
                problems.append(
                    ImportFormatError(
                        f"the report's text is {len(report.text):,} characters (at most {MAX_CELL:,}).",
                        file=self.name,
                        row=report.row,
                    )
                )
                continue
            if not self.split_sentences:
                records.append((report.row, SourceRecord(key=key, text=report.text, report_key=key)))
                continue
            for number, sentence in enumerate(sentences_of(report.text), start=1):
                records.append(
                    (report.row, SourceRecord(key=f"{key}-{number:03d}", text=sentence, report_key=key))
                )
        if problems:
            raise ImportFormatErrors(problems)
        return records
