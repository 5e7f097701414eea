"""HL7 v2 ORU^R01 messages (one or more in a file, each starting with its MSH segment), parsed
with `hl7apy`. A report is an order (OBR) with its text observations: the OBX segments whose
value type is TX, FT or ST, their repetitions a line each, in order. Other segments are not read:
PID, PV1, NK1 and the like hold the patient, and OBR's own fields (accession number, ordering
clinician) are used only to tell one report from another, hashed, never stored. Every bad
message or segment is named (line, segment and why) before anything is written."""

from __future__ import annotations

import re

from hl7apy.consts import VALIDATION_LEVEL
from hl7apy.exceptions import HL7apyException
from hl7apy.parser import parse_message, parse_segment

from studies.importers.clinical_report import ClinicalReport, text_identity
from studies.importers.errors import ImportFormatError, ImportFormatErrors

TEXT_TYPES = {"TX", "FT", "ST"}
_ESCAPE = re.compile(
    r"\\(\.br|F|S|T|R|E|X[0-9A-Fa-f]*|H|N|\.sp\d*|\.in[+-]?\d*|\.ti[+-]?\d*|\.ce|\.fi|\.nf)\\"
)


def hl7_reports_read(data: bytes, *, name: str) -> list[ClinicalReport]:
    """The reports of every ORU^R01 message in `data`; ImportFormatErrors naming every bad one."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # HL7 v2's default character set is ASCII; Latin-1 is common.
    problems: list[ImportFormatError] = []
    reports: list[ClinicalReport] = []
    for first_line, segments in _messages(text):
        reports.extend(_message_reports(segments, first_line=first_line, name=name, problems=problems))
    if not reports and not problems:
        problems.append(ImportFormatError("no ORU^R01 message with OBX text in the file.", file=name))
    if problems:
        raise ImportFormatErrors(sorted(problems, key=lambda p: p.row or 0))
    return reports


def _messages(text: str) -> list[tuple[int, list[tuple[int, str]]]]:
    """Messages as (first line, [(line, segment)]); segments end at CR, LF or CRLF."""
    messages: list[tuple[int, list[tuple[int, str]]]] = []
    for number, segment in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        segment = segment.strip()
        if not segment:
            continue
        if segment.startswith("MSH") or not messages:
            messages.append((number, []))
        messages[-1][1].append((number, segment))
    return messages


def _message_reports(
    segments: list[tuple[int, str]], *, first_line: int, name: str, problems: list[ImportFormatError]
) -> list[ClinicalReport]:
    before = len(problems)
    if not segments[0][1].startswith("MSH"):
        problems.append(
            ImportFormatError("a message must start with an MSH segment.", file=name, row=first_line)
        )
        return []
    try:
        message = parse_message(
            "\r".join(s for _, s in segments), find_groups=False, validation_level=VALIDATION_LEVEL.TOLERANT
        )
    except (HL7apyException, ValueError, IndexError) as exc:
        problems.append(ImportFormatError(f"not an HL7 v2 message ({exc}).", file=name, row=first_line))
        return []
    kind = message.msh.msh_9.value or ""
    if not kind.startswith("ORU^R01"):
        problems.append(
            ImportFormatError(
                f"a {kind or 'untyped'} message: only ORU^R01 (observation results) is read.",
                file=name,
                row=first_line,
                column="MSH-9",
            )
        )
        return []
    control = message.msh.msh_10.value or ""
    orders: list[dict] = []
    for line, text in segments[1:]:
        kind = text[:3]
        if kind not in {"OBR", "OBX"}:
            continue  # PID, PV1, NK1, ORC, NTE...: not read
        try:
            segment = parse_segment(text, version=message.version, validation_level=VALIDATION_LEVEL.TOLERANT)
        except (HL7apyException, ValueError, IndexError) as exc:
            problems.append(
                ImportFormatError(f"not a valid {kind} segment ({exc}).", file=name, row=line, column=kind)
            )
            continue
        if kind == "OBR":
            order_id = (
                segment.obr_3.value or segment.obr_2.value or segment.obr_1.value or str(len(orders) + 1)
            )
            orders.append({"id": order_id, "row": line, "lines": []})
            continue
        value_type = (segment.obx_2.value or "").strip().upper()
        if value_type not in TEXT_TYPES:
            continue
        if not orders:
            problems.append(
                ImportFormatError("an OBX segment before any OBR.", file=name, row=line, column="OBX")
            )
            continue
        # hl7apy hands a value back escaped once more (its backslashes as \E\): undone first.
        values = [hl7_unescape((r.value or "").replace("\\E\\", "\\")) for r in segment.obx_5]
        if not any(v.strip() for v in values):
            problems.append(
                ImportFormatError(
                    f"an OBX {value_type} segment with no text in OBX-5.", file=name, row=line, column="OBX-5"
                )
            )
            continue
        orders[-1]["lines"].extend(values)
    reports = []
    for order in orders:
        text = "\n".join(line.rstrip() for line in order["lines"]).strip()
        if not text:
            problems.append(
                ImportFormatError(
                    "an OBR with no OBX text segment (TX, FT or ST).",
                    file=name,
                    row=order["row"],
                    column="OBR",
                )
            )
            continue
        identity = f"hl7:{control}/{order['id']}" if control else text_identity(text)
        reports.append(ClinicalReport(identity=identity, text=text, row=order["row"]))
    if not orders and len(problems) == before:
        problems.append(
            ImportFormatError("an ORU^R01 message with no OBR segment.", file=name, row=first_line)
        )
    return reports


def hl7_unescape(value: str) -> str:
    """HL7 v2's escape sequences in text (the standard's section 2.7): separators, line breaks,
    hexadecimal characters; formatting commands other than a line break are dropped."""

    def replace(match: re.Match) -> str:
        code = match.group(1)
        if code == ".br":
            return "\n"
        if code in {"F", "S", "T", "R", "E"}:
            return {"F": "|", "S": "^", "T": "&", "R": "~", "E": "\\"}[code]
        if code.startswith("X") and len(code) > 1 and len(code) % 2 == 1:
            try:
                return bytes.fromhex(code[1:]).decode("latin-1")
            except ValueError:
                return ""
        return ""

    return _ESCAPE.sub(replace, value)
