"""Uploads heal like every other job (console/upload_heal.py): a retry keeps its claim, a dead
worker's upload (a stale heartbeat) is sent again by the healing check and imported, a lost
message is sent again, an upload past its attempts is abandoned, and the file of every finished
upload is removed from the media storage. The dead worker is simulated by its stale heartbeat: the
shared PostgreSQL is never restarted."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotation.models import ActivityEvent, Source, SourceUpload
from config.celery_app import app, heal_on_start
from console import tasks, upload_heal, upload_services

GOOD = (
    "source_key,source_text,plain_bs\n"
    "a,No acute fracture.,No broken bone.\n"
    "z,Mild cardiomegaly.,A big heart.\n"
)


@pytest.fixture
def upload(db, draft, editor, media, django_capture_on_commit_callbacks):
    """An upload whose task has not run yet (its on-commit send is dropped)."""
    with django_capture_on_commit_callbacks(execute=False):
        return upload_services.source_upload_create(
            study=draft, uploaded_file=SimpleUploadedFile("s.csv", GOOD.encode()), user=editor
        )


def _stored(upload: SourceUpload) -> Path:
    return Path(upload.file.path)


def _worker_died(upload: SourceUpload, *, attempts: int = 1, ago: float = 600) -> None:
    """What a worker killed mid-import leaves: running, its heartbeat stopped `ago` seconds ago."""
    then = timezone.now() - timedelta(seconds=ago)
    SourceUpload.objects.filter(pk=upload.pk).update(
        status="running",
        task_id="dead-task",
        attempts=attempts,
        started_at=then,
        heartbeat_at=then,
        sent_at=then,
    )


def test_the_retry_of_the_task_takes_over_its_own_claim(upload, draft):
    """After a lost database connection the task is retried with the same id; the heartbeat is
    fresh (its first try stamped it a moment ago), so only the task id lets it go on."""
    SourceUpload.objects.filter(pk=upload.pk).update(
        status="running",
        task_id="first-try",
        attempts=1,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    assert upload_services.source_upload_run(upload_id=upload.pk, task_id="another") is None
    done = upload_services.source_upload_run(upload_id=upload.pk, task_id="first-try")
    assert done is not None and done.status == "succeeded" and done.attempts == 2
    assert Source.objects.filter(study=draft, key="z").exists()


def test_a_dead_workers_upload_is_sent_again_by_the_healing_check_and_imported(
    upload, draft, django_capture_on_commit_callbacks
):
    path = _stored(upload)
    _worker_died(upload)
    assert upload_services.upload_is_stalled(upload=SourceUpload.objects.get(pk=upload.pk))
    with django_capture_on_commit_callbacks(execute=True):  # embedded mode: the send runs the task
        assert tasks.source_uploads_heal() == 1
    healed = SourceUpload.objects.get(pk=upload.pk)
    assert healed.status == "succeeded" and healed.attempts == 2 and healed.heartbeat_at is None
    assert Source.objects.filter(study=draft, key="z").exists()
    assert healed.file.name == "" and not path.exists()  # the imported file is not kept
    with django_capture_on_commit_callbacks(execute=True):
        assert upload_heal.source_uploads_heal() == 0  # nothing left to heal


def test_a_live_upload_and_one_sent_again_moments_ago_are_left_alone(
    upload, django_capture_on_commit_callbacks
):
    SourceUpload.objects.filter(pk=upload.pk).update(
        status="running", task_id="live", attempts=1, started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    with django_capture_on_commit_callbacks(execute=True) as sent:
        assert upload_heal.source_uploads_heal() == 0
    _worker_died(upload)
    SourceUpload.objects.filter(pk=upload.pk).update(sent_at=timezone.now())  # healed a moment ago
    with django_capture_on_commit_callbacks(execute=True) as sent:
        assert upload_heal.source_uploads_heal() == 0
    assert sent == []


def test_a_queued_upload_whose_message_was_lost_is_sent_again(upload, django_capture_on_commit_callbacks):
    assert upload_heal.source_uploads_heal() == 0  # sent just now: not lost yet
    overdue = timezone.now() - timedelta(seconds=django_settings.RADLAY_JOB_TIMING.dispatch_deadline + 1)
    SourceUpload.objects.filter(pk=upload.pk).update(sent_at=overdue)
    with django_capture_on_commit_callbacks(execute=True):
        assert upload_heal.source_uploads_heal() == 1
    assert SourceUpload.objects.get(pk=upload.pk).status == "succeeded"


def test_an_upload_that_lost_its_worker_every_attempt_is_abandoned_and_its_file_removed(
    upload, draft, settings, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_ATTEMPTS = 3
    path = _stored(upload)
    assert path.exists()
    _worker_died(upload, attempts=3)
    with django_capture_on_commit_callbacks(execute=True) as sent:
        assert upload_heal.source_uploads_heal() == 2  # abandoned, then its file removed
    assert sent == []  # not sent again
    abandoned = SourceUpload.objects.get(pk=upload.pk)
    assert abandoned.status == "failed" and abandoned.finished_at is not None
    assert "interrupted 3 times" in abandoned.errors[0]["reason"]
    assert abandoned.file.name == "" and not path.exists()
    assert not Source.objects.filter(study=draft, key="z").exists()
    assert ActivityEvent.objects.filter(study=draft, verb="sources.refused").exists()


def test_a_finished_uploads_leftover_file_is_removed(upload):
    path = _stored(upload)
    SourceUpload.objects.filter(pk=upload.pk).update(status="failed", finished_at=timezone.now())
    assert upload_heal.source_uploads_heal() == 1
    assert not path.exists() and SourceUpload.objects.get(pk=upload.pk).file.name == ""


def test_beat_and_every_starting_worker_run_the_upload_heal(monkeypatch):
    scheduled = {entry["task"] for entry in django_settings.CELERY_BEAT_SCHEDULE.values()}
    assert upload_heal.TASK in scheduled and tasks.source_uploads_heal.name == upload_heal.TASK
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, *a, **k: sent.append(name))
    heal_on_start()
    assert upload_heal.TASK in sent
