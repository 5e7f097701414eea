"""The console's import of a study archive: upload, the manifest's counts and exclusions shown,
confirm under a chosen slug, all or nothing; refusals on the field; researchers only."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Study, StudyMembership
from console.archive_views import SESSION_KEY
from evaluation.exports.study_archive import study_archive_write
from evaluation.exports.study_archive_tables import EXCLUDED
from tests.annotation import answers as typed_answers
from tests.evaluation.instrument_studies import seed002_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def archive_bytes(db) -> bytes:
    study, _, _ = seed002_study(slug="medlay", n_sources=3)
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer)
    return buffer.getvalue()


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("ada", password="pw", is_staff=True)


def _upload(client, data: bytes, name: str = "medlay-archive.zip"):
    return client.post(reverse("console:study-import"), {"file": SimpleUploadedFile(name, data)})


def test_upload_shows_the_counts_then_confirm_imports_the_copy(client, staff, archive_bytes, media):
    client.force_login(staff)
    assert client.get(reverse("evaluation:study-list")).content.decode().count("Import a study archive") == 1
    response = _upload(client, archive_bytes)
    html = response.content.decode()
    assert response.status_code == 200
    answers = typed_answers.item_answers().filter(participant__study__slug="medlay").count()
    assert f'<td>annotation.itemanswer</td><td class="num">{answers}</td>' in html
    for table in EXCLUDED:
        assert f"<code>{table}</code>" in html
    assert "<code>privacy.deidfinding</code>" in html  # by default the identifiers stay out
    assert "Its sources are de-identified" in html
    assert 'value="medlay-copy"' in html  # the archived slug is taken here: a free one is offered
    (token,) = client.session[SESSION_KEY]
    assert (media / "archive-imports" / f"{token}.zip").is_file()
    response = client.post(reverse("console:study-import-confirm"), {"token": token, "slug": "moved"})
    assert response.status_code == 302 and response["Location"] == reverse(
        "console:study-setup", args=["moved"]
    )
    moved = Study.objects.get(slug="moved")
    assert typed_answers.item_answers().filter(participant__study=moved).count() == answers
    assert StudyMembership.objects.get(study=moved, user=staff).role == "owner"
    assert moved.activity.filter(verb="study.imported", actor=staff).exists()
    assert not (media / "archive-imports" / f"{token}.zip").exists()


def test_refusals_are_shown_on_the_field_and_import_nothing(client, staff, archive_bytes):
    client.force_login(staff)
    studies = Study.objects.count()
    response = _upload(client, b"source_key,source_text\n", name="answers.csv")
    assert response.status_code == 400 and "a study archive is a .zip file" in response.content.decode()
    response = _upload(client, b"not a zip", name="x.zip")
    assert response.status_code == 400 and "not a zip file" in response.content.decode()
    # A damaged table: found on confirmation, shown on the form, nothing written.
    source = zipfile.ZipFile(io.BytesIO(archive_bytes))
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name == "annotation.itemanswer.jsonl":
                rows = [json.loads(line) for line in data.splitlines()]
                rows[5]["fields"]["shown_text"] = 10**9
                data = "\n".join(map(json.dumps, rows)).encode()
            out.writestr(name, data)
    _upload(client, damaged.getvalue())
    token = client.session[SESSION_KEY][-1]
    response = client.post(reverse("console:study-import-confirm"), {"token": token, "slug": "medlay"})
    assert response.status_code == 400 and "exists here: choose another" in response.content.decode()
    response = client.post(reverse("console:study-import-confirm"), {"token": token, "slug": "fresh"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "annotation.itemanswer.jsonl, row 6: shown_text refers to a row the archive does not hold" in html
    assert Study.objects.count() == studies
    # Another session's token is refused.
    other = get_user_model().objects.create_user("bob", password="pw", is_staff=True)
    client.force_login(other)
    response = client.post(reverse("console:study-import-confirm"), {"token": token, "slug": "stolen"})
    assert response.status_code == 400 and "not yours or has expired" in response.content.decode()


def test_a_database_error_is_reported_as_the_databases(client, staff, archive_bytes):
    """An archive whose rows each pass but break a constraint together (two answers to one item on
    one pair): the database's refusal is said as such, not blamed on a row of the archive."""
    source = zipfile.ZipFile(io.BytesIO(archive_bytes))
    doubled = io.BytesIO()
    with zipfile.ZipFile(doubled, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name == "annotation.itemanswer.jsonl":
                rows = [json.loads(line) for line in data.splitlines()]
                rows.append({**rows[0], "pk": 10**9})
                data = "\n".join(map(json.dumps, rows)).encode()
            if name == "manifest.json":
                manifest = json.loads(data)
                manifest["counts"]["annotation.itemanswer"] += 1
                data = json.dumps(manifest).encode()
            out.writestr(name, data)
    client.force_login(staff)
    _upload(client, doubled.getvalue())
    token = client.session[SESSION_KEY][-1]
    studies = Study.objects.count()
    response = client.post(reverse("console:study-import-confirm"), {"token": token, "slug": "fresh"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Database error: the database refused the rows of annotation.itemanswer" in html
    assert "item_answer_unique_pair" in html or "UNIQUE constraint failed: annotation_itemanswer" in html
    assert ", row " not in html
    assert Study.objects.count() == studies


def test_only_researchers_who_may_create_studies_import(client, archive_bytes):
    radiologist = get_user_model().objects.create_user("rad", password="pw")
    client.force_login(radiologist)
    assert client.get(reverse("console:study-import")).status_code == 403
    assert _upload(client, archive_bytes).status_code == 403
    client.logout()
    assert client.get(reverse("console:study-import")).status_code == 302
