"""FHIR R4 DiagnosticReports, from a Bundle (JSON) or one resource a line (NDJSON, the bulk-data
export's shape), validated with `fhir.resources` (its R4B models: Bundle and DiagnosticReport are
the same in R4 and R4B).

Only DiagnosticReport resources are read, and of each only its text: the `text/plain`
presentedForm (base64, the whole report) when there is one, else the narrative `text`, else the
`conclusion`. Patient and every other resource are skipped unread, and so are a report's
`subject`, `identifier` and performer: nothing about the patient reaches radlay. Every bad
resource is named (entry or line, and why) before anything is written."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.diagnosticreport import DiagnosticReport
from pydantic import ValidationError

from studies.importers.clinical_report import ClinicalReport, text_identity
from studies.importers.errors import ImportFormatError, ImportFormatErrors

REPORT = "DiagnosticReport"


def fhir_reports_read(data: bytes, *, name: str, ndjson: bool) -> list[ClinicalReport]:
    """The reports of a Bundle (or of one DiagnosticReport) in JSON, or of an NDJSON file;
    ImportFormatErrors naming every bad resource."""
    problems: list[ImportFormatError] = []
    text = _decoded(data, name=name)
    reports: list[ClinicalReport] = []
    for row, resource in _resources(text, name=name, ndjson=ndjson, problems=problems):
        report = _report(resource, name=name, row=row, problems=problems)
        if report is not None:
            reports.append(report)
    if not reports and not problems:
        problems.append(ImportFormatError("no DiagnosticReport resource in the file.", file=name))
    if problems:
        raise ImportFormatErrors(sorted(problems, key=lambda p: p.row or 0))
    return reports


def _decoded(data: bytes, *, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text ({exc}).", file=name) from None


def _resources(text: str, *, name: str, ndjson: bool, problems: list[ImportFormatError]):
    """(row, resource dict) of every DiagnosticReport; other resources are skipped unread. `row`
    is the line (NDJSON) or the Bundle entry's number (1-based)."""
    if ndjson:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(ImportFormatError(f"not valid JSON ({exc.msg}).", file=name, row=number))
                continue
            if not isinstance(obj, dict) or "resourceType" not in obj:
                problems.append(
                    ImportFormatError("not a FHIR resource (no resourceType).", file=name, row=number)
                )
            elif obj["resourceType"] == REPORT:
                yield number, obj
        return
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"not valid JSON ({exc.msg}, line {exc.lineno}).", file=name) from None
    if not isinstance(obj, dict) or "resourceType" not in obj:
        raise ImportFormatError("not a FHIR resource (no resourceType).", file=name)
    if obj["resourceType"] == REPORT:
        yield 1, obj
        return
    if obj["resourceType"] != "Bundle":
        raise ImportFormatError(
            f"a {obj['resourceType']} resource: expected a Bundle of DiagnosticReports.", file=name
        )
    entries = obj.get("entry") or []
    if not isinstance(entries, list):
        raise ImportFormatError("the Bundle's entry must be a list.", file=name, column="entry")
    # The Bundle's own fields are validated without its entries' resources (a Patient is not read).
    shell = {**obj, "entry": [_without_resource(e) for e in entries]}
    try:
        Bundle.model_validate(shell)
    except ValidationError as exc:
        raise ImportFormatError(f"not a valid Bundle: {_reasons(exc)}", file=name) from None
    for number, entry in enumerate(entries, start=1):
        resource = entry.get("resource") if isinstance(entry, dict) else None
        if isinstance(resource, dict) and resource.get("resourceType") == REPORT:
            yield number, resource


def _without_resource(entry: Any) -> Any:
    return {k: v for k, v in entry.items() if k != "resource"} if isinstance(entry, dict) else entry


def _report(
    resource: dict, *, name: str, row: int, problems: list[ImportFormatError]
) -> ClinicalReport | None:
    try:
        report = DiagnosticReport.model_validate(resource)
    except (ValidationError, ValueError) as exc:
        reasons = _reasons(exc) if isinstance(exc, ValidationError) else str(exc)
        problems.append(ImportFormatError(f"not a valid DiagnosticReport: {reasons}", file=name, row=row))
        return None
    text = ""
    for form in report.presentedForm or []:
        if (form.contentType or "").split(";")[0].strip().lower() == "text/plain" and form.data:
            try:
                text = form.data.decode("utf-8")
            except UnicodeDecodeError:
                problems.append(
                    ImportFormatError(
                        "presentedForm text/plain is not UTF-8.", file=name, row=row, column="presentedForm"
                    )
                )
                return None
            break
    if not text.strip() and report.text is not None and report.text.div:
        text = narrative_text(report.text.div)
    if not text.strip():
        text = report.conclusion or ""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        problems.append(
            ImportFormatError(
                "no report text: no text/plain presentedForm, narrative text or conclusion.",
                file=name,
                row=row,
            )
        )
        return None
    identity = f"fhir:{REPORT}/{report.id}" if report.id else text_identity(text)
    return ClinicalReport(identity=identity, text=text, row=row)


def _reasons(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or 'resource'}: {error['msg']}"
        for error in exc.errors()[:5]
    )


BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "pre"}


class _NarrativeText(HTMLParser):
    """The text of a narrative's XHTML, a line per block element."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def narrative_text(div: str) -> str:
    parser = _NarrativeText()
    parser.feed(div)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)
