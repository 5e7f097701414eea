"""Uploads heal like every other job (docs/architecture/job-layer.md): the healing check, sent by
beat every RADLAY_JOB_TIMING.heal_interval seconds and at every worker's start, sends again an upload whose
worker died (running, its heartbeat older than the job layer's stale_after) or whose message was
lost (queued, sent longer than RADLAY_JOB_TIMING.dispatch_deadline ago, or refused by a broker that was
down); an upload that lost its worker RADLAY_JOB_ATTEMPTS times is abandoned (work.single_jobs,
console/upload_jobs.py). The file of every finished upload (imported, refused or abandoned) is
removed from the media storage."""

from __future__ import annotations

from annotation.models import SourceUpload
from console.upload_jobs import UPLOADS
from work.single_jobs import jobs_heal

TASK = "console.tasks.source_uploads_heal"
FINISHED = (SourceUpload.Status.SUCCEEDED, SourceUpload.Status.FAILED)


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
    return jobs_heal(UPLOADS) + finished_files_remove()
