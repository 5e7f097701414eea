"""Reports from hospital systems: FHIR R4 DiagnosticReports (Bundle JSON, NDJSON) and HL7 v2
ORU^R01 messages imported as sources by `manage.py import_study`, the report's text only, under
keys that do not identify it; every bad resource or segment named; all or nothing; a report
split into sentences keeps its report."""

from __future__ import annotations

import base64
import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import ActivityEvent, Source, Study
from measures.metrics.sentences import split_sentences
from studies.importers.errors import ImportFormatError, ImportFormatErrors
from studies.importers.hl7_reports import hl7_unescape
from studies.importers.report_file import study_file_open

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent / "clinical_reports"
# What the synthetic fixtures carry about the patient and the order: none of it may be stored.
IDENTIFIERS = (
    "MRN4471920",
    "Synthetic-Doe",
    "SYNTHETIC-DOE",
    "Jane",
    "JANE",
    "1948-03-14",
    "19480314",
    "555-201-7788",
    "Elm Road",
    "ACC-2024",
    "pat-1",
    "dr-1",
    "MSG0000",
    "SMITH",
)


def run_import(path: Path, slug: str, *extra: str) -> str:
    out = StringIO()
    call_command("import_study", str(path), "--study", slug, *extra, stdout=out, stderr=StringIO())
    return out.getvalue()


def stored_text(study: Study) -> str:
    """Everything radlay keeps of the study's sources and of its activity log, as one string."""
    rows = Source.objects.filter(study=study).values_list("key", "text", "metadata", "report_key")
    events = ActivityEvent.objects.filter(study=study).values_list("details", flat=True)
    return json.dumps([list(rows), list(events)], default=str)


def assert_no_identifier(study: Study) -> None:
    everything = stored_text(study)
    for identifier in IDENTIFIERS:
        assert identifier not in everything, identifier


def test_a_fhir_bundle_imports_each_report_whole_without_the_patient():
    out = run_import(FIXTURES / "bundle.json", "fhir")
    assert "3 sources" in out
    study = Study.objects.get(slug="fhir")
    sources = list(Source.objects.filter(study=study).order_by("position"))
    bundle = json.loads((FIXTURES / "bundle.json").read_text())
    presented = base64.b64decode(bundle["entry"][1]["resource"]["presentedForm"][0]["data"]).decode()
    # presentedForm (text/plain, base64) is the whole report; a conclusion alone; the narrative
    # XHTML a line per block.
    assert sources[0].text == presented.strip()
    assert len(sources[0].text.split()) >= 300 and "\n\n" in sources[0].text
    assert sources[1].text == "No acute cardiopulmonary process. The lungs are clear."
    assert sources[2].text == "Mild degenerative change of the thoracic spine.\nNo fracture."
    assert all(s.key.startswith("report-") and s.report_key == s.key for s in sources)
    assert_no_identifier(study)


def test_fhir_ndjson_is_told_from_radlay_jsonl_by_its_resource_type(tmp_path):
    run_import(FIXTURES / "reports.ndjson", "ndjson")
    texts = set(Source.objects.filter(study__slug="ndjson").values_list("text", flat=True))
    assert texts == {
        "Small left pleural effusion. No consolidation.",
        "Right knee: no fracture or dislocation.\nSmall joint effusion.",
    }
    assert_no_identifier(Study.objects.get(slug="ndjson"))
    # The same suffix with radlay's own columns is still a study file.
    plain = tmp_path / "plain.ndjson"
    plain.write_text(json.dumps({"source_key": "a", "source_text": "No fracture."}) + "\n")
    run_import(plain, "plain-jsonl")
    assert Source.objects.get(study__slug="plain-jsonl").key == "a"


def test_hl7_oru_messages_import_their_obx_text_per_order_never_the_pid():
    run_import(FIXTURES / "oru_r01.hl7", "hl7")
    study = Study.objects.get(slug="hl7")
    texts = list(Source.objects.filter(study=study).order_by("position").values_list("text", flat=True))
    # TX and FT observations, their repetitions and \.br\ a line each; the NM heart rate is not text.
    assert texts == [
        "FINDINGS: The lungs are clear.\nNo pleural effusion.\n"
        "No acute cardiopulmonary abnormality.\nHeart size is normal.",
        "Left lower lobe pneumonia. Follow-up radiograph in 6 weeks.",
    ]
    assert "72" not in texts[0]
    assert_no_identifier(study)


def test_keys_are_stable_on_reimport_and_not_a_hash_anyone_can_recompute():
    run_import(FIXTURES / "oru_r01.hl7", "again")
    keys = list(Source.objects.filter(study__slug="again").order_by("position").values_list("key", flat=True))
    run_import(FIXTURES / "oru_r01.hl7", "again")
    assert (
        list(Source.objects.filter(study__slug="again").order_by("position").values_list("key", flat=True))
        == keys
    )
    import hashlib

    for candidate in ("hl7:MSG00001/ACC-2024-77001", "ACC-2024-77001", "MRN4471920"):
        assert hashlib.sha256(candidate.encode()).hexdigest()[:16] not in keys[0]


def test_split_sentences_gives_a_source_per_sentence_keeping_its_report():
    run_import(FIXTURES / "bundle.json", "split", "--split-sentences")
    study = Study.objects.get(slug="split")
    sources = list(Source.objects.filter(study=study).order_by("position"))
    bundle = json.loads((FIXTURES / "bundle.json").read_text())
    presented = base64.b64decode(bundle["entry"][1]["resource"]["presentedForm"][0]["data"]).decode()
    first_report = [s for s in sources if s.report_key == sources[0].report_key]
    assert [s.text for s in first_report] == split_sentences(presented)
    assert len({s.report_key for s in sources}) == 3
    assert all(s.key.startswith(s.report_key + "-") for s in sources)
    assert_no_identifier(study)


def test_split_sentences_is_refused_for_a_csv(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("source_key,source_text\na,No fracture.\n")
    with pytest.raises(CommandError, match="splitting into sentences applies to FHIR and HL7"):
        run_import(path, "csv-split", "--split-sentences")


def test_a_bad_bundle_names_every_bad_report_and_imports_nothing():
    with pytest.raises(CommandError) as caught:
        run_import(FIXTURES / "bad_bundle.json", "bad-fhir")
    message = str(caught.value)
    assert message.startswith("Nothing was imported.")
    assert "row 3: not a valid DiagnosticReport: code: Field required" in message
    assert "row 4: not a valid DiagnosticReport: issued:" in message
    assert "row 5: no report text" in message
    # The good report (entry 2) is not imported either, nor the study created.
    assert not Study.objects.filter(slug="bad-fhir").exists()


def test_bad_hl7_names_each_bad_message_and_segment():
    with pytest.raises(ImportFormatErrors) as caught:
        study_file_open(FIXTURES / "bad.hl7").check()
    where = [(p.row, p.column) for p in caught.value.problems]
    assert where == [(6, "MSH-9"), (11, "OBR"), (12, "OBX-5")]
    assert "ADT^A01" in caught.value.problems[0].detail
    with pytest.raises(CommandError):
        run_import(FIXTURES / "bad.hl7", "bad-hl7")
    assert not Study.objects.filter(slug="bad-hl7").exists()


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("x.json", "{not json", "not valid JSON"),
        ("x.json", '{"resourceType": "Patient", "id": "p"}', "a Patient resource: expected a Bundle"),
        (
            "x.json",
            '{"resourceType": "Bundle", "type": "collection", "timestamp": "soon", "entry": []}',
            "not a valid Bundle",
        ),
        ("x.json", '{"resourceType": "Bundle", "type": "collection", "entry": []}', "no DiagnosticReport"),
        ("x.hl7", "MSH|^~\\&|A|B|C|D|2024||ORU^R01|1|P|2.5\rPID|1||X\r", "no OBR segment"),
        ("x.hl7", "PID|1||X\rOBR|1\r", "must start with an MSH segment"),
        ("x.ndjson", '{"resourceType": "DiagnosticReport"}\n[1]\n', "not a FHIR resource"),
    ],
)
def test_malformed_exports_are_refused_with_a_reason(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ImportFormatError, match=reason.replace("^", r"\^")):
        study_file_open(path).check()


def test_the_same_report_twice_is_refused(tmp_path):
    bundle = json.loads((FIXTURES / "bundle.json").read_text())
    bundle["entry"].append(bundle["entry"][2])
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(bundle))
    with pytest.raises(ImportFormatErrors, match="row 5: the same report as at 3"):
        study_file_open(path).check()


def test_hl7_escapes_are_decoded():
    assert hl7_unescape(r"A \T\ B\.br\C \F\ D \S\ \R\ \E\ \X41\ \H\bold\N\ ") == "A & B\nC | D ^ ~ \\ A bold "


def test_a_file_with_a_supported_suffix_copied_elsewhere_keeps_its_reader(tmp_path):
    copy = tmp_path / "export.HL7"
    shutil.copy(FIXTURES / "oru_r01.hl7", copy)
    assert study_file_open(copy).check().sources == 2
