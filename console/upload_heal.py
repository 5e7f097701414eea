"""Uploads heal like every other job (docs/architecture/job-layer.md): the healing check, sent by
beat every RADLAY_GENERATION_HEAL_INTERVAL seconds and at every worker's start, sends again an
upload whose worker died (running, its heartbeat older than the job layer's stale_after) or whose
message was lost (queued, sent longer than RADLAY_GENERATION_DISPATCH_DEADLINE ago). An upload
that lost its worker RADLAY_GENERATION_JOB_ATTEMPTS times is abandoned: refused with a reason, as a
bad file is. Nothing of an interrupted import was written (it is one transaction), so running it
again is safe. The file of every finished upload (imported, refused or abandoned) is removed from
the media storage."""

from __future__ import annotations

import logging
from datetime import timedelta
from functools import partial

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotation.activity_services import activity_record
from annotation.models import SourceUpload
from console.upload_services import TASK as RUN_TASK
from work import runner
from work.scheduler import timing_from_settings

logger = logging.getLogger(__name__)

TASK = "console.tasks.source_uploads_heal"
QUEUED, RUNNING = SourceUpload.Status.QUEUED, SourceUpload.Status.RUNNING
FINISHED = (SourceUpload.Status.SUCCEEDED, SourceUpload.Status.FAILED)


def _lost() -> Q:
    """Running uploads whose worker is gone (and not sent again since), queued ones whose message
    is gone."""
    t = timing_from_settings()
    now = timezone.now()
    stale = now - timedelta(seconds=t.stale_after)
    overdue = now - timedelta(seconds=t.dispatch_deadline)
    silent = Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, started_at__lt=stale)
    not_resent = Q(sent_at__isnull=True) | Q(sent_at__lt=stale)
    worker_lost = Q(status=RUNNING) & silent & not_resent
    message_lost = Q(status=QUEUED) & (
        Q(sent_at__lt=overdue) | Q(sent_at__isnull=True, created_at__lt=overdue)
    )
    return worker_lost | message_lost


def _send(upload_id: int) -> None:
    try:
        runner.send(RUN_TASK, [[upload_id]])
    except (BrokerError, OSError):
        # sent_at stays: the next healing check sends it again once the broker is back.
        logger.warning("upload %s: the import task could not be sent", upload_id, exc_info=True)


def _abandon(upload: SourceUpload) -> None:
    reason = (
        f"the import was interrupted {upload.attempts} times (its worker was lost each time); nothing"
        " of it was written. Upload the file again, or split it."
    )
    errors = [{"file": upload.original_name, "row": None, "column": "", "reason": reason}]
    SourceUpload.objects.filter(pk=upload.pk).update(
        status=SourceUpload.Status.FAILED,
        finished_at=timezone.now(),
        heartbeat_at=None,
        phase="",
        errors=errors,
    )
    activity_record(
        study=upload.study,
        actor=upload.uploaded_by or "console upload",
        verb="sources.refused",
        obj=upload,
        details={"file": upload.original_name, "errors": errors},
    )


def finished_files_remove() -> int:
    """Remove the stored file of every finished upload that still has one (its task ended before
    it could: the import's outcome is written first). Returns how many."""
    removed = 0
    for upload in SourceUpload.objects.filter(status__in=FINISHED).exclude(file="").only("pk", "file"):
        upload.file.delete(save=False)
        SourceUpload.objects.filter(pk=upload.pk).update(file="")
        removed += 1
    return removed


def source_uploads_heal() -> int:
    """Send the lost uploads again, abandon those past their attempts, remove finished uploads'
    files. Returns how many uploads it acted on."""
    max_attempts = timing_from_settings().max_attempts
    acted = 0
    for upload_id in SourceUpload.objects.filter(_lost()).values_list("pk", flat=True):
        with transaction.atomic():
            # Re-checked under the row lock: a worker may have taken it meanwhile.
            upload = (
                SourceUpload.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("study", "uploaded_by")
                .filter(_lost(), pk=upload_id)
                .first()
            )
            if upload is None:
                continue
            if upload.status == RUNNING and upload.attempts >= max_attempts:
                _abandon(upload)
                logger.warning("upload %s: abandoned after %s lost workers", upload_id, upload.attempts)
            else:
                SourceUpload.objects.filter(pk=upload_id).update(sent_at=timezone.now())
                transaction.on_commit(partial(_send, upload_id))
                logger.warning("upload %s: its import was lost; sent again", upload_id)
        acted += 1
    return acted + finished_files_remove()
