"""The console's upload page: the same reader and writer as `manage.py import_study`, run by a
task; a refused file's errors as a table of file, row, column and reason; re-uploads add or
update; a 105,000-row file streamed to disk and imported."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile, TemporaryUploadedFile
from django.urls import reverse

from annotation.models import ActivityEvent, Simplification, Source, SourceUpload
from console import upload_services
from studies.importers.study_file import StudyFile

GOOD = (
    "source_key,source_text,plain_bs\n"
    "a,No acute fracture.,No broken bone.\n"
    "b,Mild cardiomegaly.,A slightly big heart.\n"
)
BAD = GOOD + "c,Small effusion.,Some fluid.\nd,Lung nodule.,A small spot.,extra cell\n"


def _upload(client, study, name: str, text: str, capture):
    with capture(execute=True):
        return client.post(
            reverse("console:upload", args=[study.slug]),
            {"file": SimpleUploadedFile(name, text.encode("utf-8"), content_type="text/csv")},
        )


def test_a_bad_row_is_refused_with_its_row_and_column_and_nothing_written(
    client, editor, draft, django_capture_on_commit_callbacks
):
    client.force_login(editor)
    before = set(Source.objects.filter(study=draft).values_list("key", flat=True))
    bad = (
        "source_key,source_text,reference_severity,plain_bs\n"
        "a,No acute fracture.,Healthy,No broken bone.\n"
        "b,Mild cardiomegaly.,Dire,A big heart.\n"
    )
    response = _upload(client, draft, "sources.csv", bad, django_capture_on_commit_callbacks)
    upload = SourceUpload.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "console:upload-detail", args=[draft.slug, upload.pk]
    )
    assert upload.status == "failed"
    assert upload.errors == [
        {
            "file": "sources.csv",
            "row": 3,
            "column": "reference_severity",
            "reason": "'Dire' is not a severity level (one of Critical, Serious, Moderate, Mild, Healthy).",
        }
    ]
    assert set(Source.objects.filter(study=draft).values_list("key", flat=True)) == before
    page = client.get(response["Location"]).content.decode()
    assert "reference_severity" in page and "<td>3</td>" in page and "Nothing was imported" in page
    verbs = list(ActivityEvent.objects.filter(study=draft).values_list("verb", flat=True))
    assert "sources.uploaded" in verbs and "sources.refused" in verbs


def test_a_fixed_file_imports_and_a_reupload_adds_or_updates(
    client, editor, draft, django_capture_on_commit_callbacks
):
    client.force_login(editor)
    _upload(client, draft, "bad.csv", BAD, django_capture_on_commit_callbacks)
    refused = SourceUpload.objects.get()
    assert refused.status == "failed" and refused.errors[0]["row"] == 5
    assert not Source.objects.filter(study=draft, key="a").exists()
    _upload(client, draft, "fixed.csv", GOOD, django_capture_on_commit_callbacks)
    done = SourceUpload.objects.filter(status="succeeded").get()
    assert done.counts == {"sources": 2, "systems": 1, "simplifications": 2}
    assert done.progress == 1.0 and not done.file
    assert Source.objects.get(study=draft, key="a").text == "No acute fracture."
    n = Source.objects.filter(study=draft).count()
    again = GOOD.replace("No broken bone.", "Nothing is broken.") + "e,New finding.,Something new.\n"
    _upload(client, draft, "again.csv", again, django_capture_on_commit_callbacks)
    assert Source.objects.filter(study=draft).count() == n + 1
    assert (
        Simplification.objects.get(source__study=draft, source__key="a", system__key="plain_bs").text
        == "Nothing is broken."
    )
    assert ActivityEvent.objects.filter(study=draft, verb="sources.imported").count() == 2


def test_a_file_of_another_kind_is_a_form_error(client, editor, draft, django_capture_on_commit_callbacks):
    client.force_login(editor)
    response = _upload(client, draft, "sources.xlsx", "not csv", django_capture_on_commit_callbacks)
    assert response.status_code == 400
    assert "use a .csv (wide or long) or .jsonl file" in response.content.decode()
    assert not SourceUpload.objects.exists()
    empty = client.post(reverse("console:upload", args=[draft.slug]), {})
    assert empty.status_code == 400 and "This field is required" in empty.content.decode()


def test_the_progress_fragment_and_another_studys_upload(
    client, editor, draft, django_capture_on_commit_callbacks
):
    from tests.annotation.factories import build_study

    client.force_login(editor)
    _upload(client, draft, "ok.csv", GOOD, django_capture_on_commit_callbacks)
    upload = SourceUpload.objects.get()
    url = reverse("console:upload-detail", args=[draft.slug, upload.pk])
    fragment = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<section id="upload-progress"') and "Imported: 2 sources" in fragment
    other = build_study(slug="other", n_sources=1)
    assert client.get(reverse("console:upload-detail", args=[other.slug, upload.pk])).status_code == 404
    # A queued one polls; its page shows the bar.
    upload.status, upload.progress = "running", 0.42
    upload.save()
    from django.utils import timezone

    SourceUpload.objects.filter(pk=upload.pk).update(heartbeat_at=timezone.now())
    running = client.get(url).content.decode()
    assert 'hx-trigger="every 1s"' in running and 'value="42"' in running


def test_the_reader_reports_how_far_it_got(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("source_key,source_text\n" + "".join(f"k{i},Text {i}.\n" for i in range(1200)))
    study_file = StudyFile(path)
    study_file.check()
    assert study_file.passes == 1 and study_file.row_number == 1000
    assert 0 < study_file.bytes_read <= path.stat().st_size


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True)
def test_a_105000_row_file_streams_to_disk_and_imports(
    client, editor, draft, monkeypatch, tmp_path, settings
):
    # The streaming import is what this proves; the de-identification of imported sources, which
    # would otherwise run Presidio over the 105,000 rows (nine tenths of the test's time), has its
    # own tests (tests/privacy).
    settings.RADLAY_DEIDENTIFY_ON_IMPORT = False
    rows = 105_000
    path = tmp_path / "large.csv"
    with path.open("w", encoding="utf-8") as out:
        out.write("source_key,source_text,plain_bs\n")
        for i in range(rows):
            out.write(f"r{i:06d},Finding number {i}: a {i % 9}.{i % 7} cm nodule.,A small spot number {i}.\n")
    seen = []
    real = upload_services.source_upload_create

    def recording(**kwargs):
        seen.append(type(kwargs["uploaded_file"]))
        return real(**kwargs)

    monkeypatch.setattr("console.upload_views.source_upload_create", recording)
    client.force_login(editor)
    with path.open("rb") as handle:
        response = client.post(reverse("console:upload", args=[draft.slug]), {"file": handle})
    assert response.status_code == 302
    # Django kept the upload on disk (larger than FILE_UPLOAD_MAX_MEMORY_SIZE), not in memory.
    assert seen == [TemporaryUploadedFile]
    upload = SourceUpload.objects.get()
    assert upload.status == "succeeded", upload.errors
    assert upload.counts == {"sources": rows, "systems": 1, "simplifications": rows}
    assert Source.objects.filter(study=draft).count() == rows + 2
    assert upload.size == path.stat().st_size


def test_the_task_claims_once(db, draft, editor, media):
    upload = upload_services.source_upload_create(
        study=draft, uploaded_file=SimpleUploadedFile("t.csv", GOOD.encode()), user=editor
    )
    assert upload_services.source_upload_run(upload_id=upload.pk).status == "succeeded"
    assert upload_services.source_upload_run(upload_id=upload.pk) is None  # a redelivery: nothing to do


def test_every_bad_row_is_listed_at_once_and_a_duplicate_key_names_both_rows(
    client, editor, draft, django_capture_on_commit_callbacks
):
    client.force_login(editor)
    bad = (
        "source_key,source_text,reference_severity,plain_bs\n"
        "a,No acute fracture.,Healthy,No broken bone.\n"  # row 2
        "b,Mild cardiomegaly.,Dire,A big heart.\n"  # row 3: no such severity
        "c,Small effusion.,Healthy\n"  # row 4: a cell short
        "a,Again.,Healthy,Again.\n"  # row 5: the key of row 2
    )
    response = _upload(client, draft, "bad.csv", bad, django_capture_on_commit_callbacks)
    assert response.status_code == 302
    upload = SourceUpload.objects.get(study=draft)
    assert upload.status == SourceUpload.Status.FAILED
    assert [error["row"] for error in upload.errors] == [3, 4, 5]
    assert "rows 2 and 5" in upload.errors[2]["reason"]
    page = client.get(reverse("console:upload-detail", args=[draft.slug, upload.pk])).content.decode()
    assert "rows 2 and 5" in page and page.count("<tr><td>bad.csv</td>") == 3
    assert not Source.objects.filter(study=draft, key="c").exists()


def test_a_long_file_stops_listing_at_the_limit(tmp_path):
    from studies.importers.errors import ImportFormatErrors
    from studies.importers.study_file import MAX_REPORTED_ERRORS

    path = tmp_path / "many.csv"
    path.write_text("source_key,source_text,plain_bs\n" + "x,y\n" * (MAX_REPORTED_ERRORS + 20))
    with pytest.raises(ImportFormatErrors) as refused:
        StudyFile(path).check()
    assert len(refused.value.problems) == MAX_REPORTED_ERRORS and refused.value.more
    assert "only the first" in str(refused.value)
