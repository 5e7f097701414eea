"""Uploads count against the job layer's running limits, as every kind of background work: one
more queued or running upload than RADLAY_JOB_LIMITS.per_study (or per_user) is refused on
the file field with the limit and its setting named, before the file is stored."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import SourceUpload
from console import upload_services
from tests.annotation.factories import build_study

GOOD = "source_key,source_text,plain_bs\na,No acute fracture.,No broken bone.\n"


def _upload(study, user):
    return upload_services.source_upload_create(
        study=study, uploaded_file=SimpleUploadedFile("s.csv", GOOD.encode()), user=user
    )


@pytest.fixture
def queued_only(db, media, django_capture_on_commit_callbacks, settings):
    """Uploads stay queued (nobody runs them), and low limits."""
    settings.RADLAY_JOB_LIMITS = replace(settings.RADLAY_JOB_LIMITS, per_study=2, per_user=3)
    with django_capture_on_commit_callbacks(execute=False):
        yield


def test_queued_uploads_are_limited_per_study_and_per_user(queued_only, draft, editor):
    _upload(draft, editor)
    _upload(draft, editor)
    with pytest.raises(ValidationError) as caught:
        _upload(draft, editor)
    (message,) = caught.value.message_dict["file"]
    assert "This study has 2 uploads queued or running already" in message
    assert "RADLAY_JOB_LIMITS.per_study" in message
    assert SourceUpload.objects.filter(study=draft).count() == 2
    other = build_study(slug="other", n_sources=1, status="draft")
    _upload(other, editor)
    with pytest.raises(ValidationError) as caught:
        _upload(build_study(slug="third", n_sources=1, status="draft"), editor)
    assert "You have 3 uploads" in caught.value.message_dict["file"][0]
    # A finished upload frees its place.
    SourceUpload.objects.filter(study=draft).update(status="succeeded")
    assert _upload(draft, get_user_model().objects.create_user("another", password="pw")).pk


def test_the_upload_page_shows_the_limit_on_the_file_field(queued_only, client, draft, editor):
    _upload(draft, editor)
    _upload(draft, editor)
    client.force_login(editor)
    page = client.post(
        reverse("console:upload", args=[draft.slug]),
        {"file": SimpleUploadedFile("s.csv", GOOD.encode())},
    )
    assert page.status_code == 400
    assert "RADLAY_JOB_LIMITS.per_study" in page.content.decode()
