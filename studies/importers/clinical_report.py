"""One report read from a hospital export (a FHIR DiagnosticReport, an HL7 v2 ORU^R01 order):
its text and what identifies it within the export, and nothing about the patient. The readers
(studies/importers/fhir_reports.py, hl7_reports.py) produce these; report_file.py turns them
into sources."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from django.conf import settings


@dataclass
class ClinicalReport:
    # What tells this report from the others of its system (a resource id, an order's control id):
    # never shown or stored, only hashed into the source key.
    identity: str
    text: str
    # Where it was read: the line (NDJSON, HL7) or the entry (a Bundle), for error messages.
    row: int


def report_source_key(identity: str) -> str:
    """A source key that names the report without identifying it: a keyed hash (HMAC-SHA256 under
    SECRET_KEY) of its identity. A plain hash would not do: record numbers are short enough to be
    found again by hashing every candidate. The same report imported again gets the same key (the
    import updates it, as a CSV's source_key does)."""
    digest = hmac.new(
        settings.SECRET_KEY.encode(), f"radlay.report-key\0{identity}".encode(), hashlib.sha256
    ).hexdigest()
    return f"report-{digest[:16]}"


def text_identity(text: str) -> str:
    """The identity of a report that carries none: its text's digest."""
    return "text:" + hashlib.sha256(text.encode()).hexdigest()
