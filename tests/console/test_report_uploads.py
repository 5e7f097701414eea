"""The console upload takes hospital exports too: a FHIR Bundle imported whole or a source per
sentence; a bad HL7 file refused with every bad message and segment in the error table."""

from __future__ import annotations

from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Source, SourceUpload

FIXTURES = Path(__file__).resolve().parents[1] / "studies" / "clinical_reports"


def _upload(client, study, name: str, capture, **extra):
    with capture(execute=True):
        return client.post(
            reverse("console:upload", args=[study.slug]),
            {"file": SimpleUploadedFile(name, (FIXTURES / name).read_bytes()), **extra},
        )


def test_a_fhir_bundle_uploads_as_sentences_keeping_their_report(
    client, editor, draft, django_capture_on_commit_callbacks
):
    client.force_login(editor)
    before = Source.objects.filter(study=draft).count()
    _upload(client, draft, "bundle.json", django_capture_on_commit_callbacks, split_sentences="on")
    upload = SourceUpload.objects.get()
    assert upload.status == "succeeded" and upload.split_sentences, upload.errors
    new = Source.objects.filter(study=draft).exclude(report_key="")
    assert new.count() == upload.counts["sources"] == Source.objects.filter(study=draft).count() - before
    assert new.values("report_key").distinct().count() == 3
    assert not Source.objects.filter(study=draft, text__contains="Synthetic-Doe").exists()


def test_a_bad_hl7_upload_lists_every_bad_segment(client, editor, draft, django_capture_on_commit_callbacks):
    client.force_login(editor)
    before = Source.objects.filter(study=draft).count()
    response = _upload(client, draft, "bad.hl7", django_capture_on_commit_callbacks)
    upload = SourceUpload.objects.get()
    assert upload.status == "failed"
    assert [(e["row"], e["column"]) for e in upload.errors] == [(6, "MSH-9"), (11, "OBR"), (12, "OBX-5")]
    assert Source.objects.filter(study=draft).count() == before
    page = client.get(response["Location"]).content.decode()
    assert "MSH-9" in page and "OBX-5" in page and "ADT^A01" in page


def test_the_upload_page_names_the_hospital_formats(client, editor, draft):
    client.force_login(editor)
    page = client.get(reverse("console:upload", args=[draft.slug])).content.decode()
    assert "FHIR R4 Bundle" in page and "HL7 v2" in page and 'name="split_sentences"' in page
