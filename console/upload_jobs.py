"""A source upload as a kind of background work on the job layer (work.single_jobs): its task, how
it is sent, and how an upload whose worker was lost RADLAY_JOB_ATTEMPTS times ends (refused with a
reason, as a bad file is). Nothing of an interrupted import was written (it is one transaction), so
running it again is safe."""

from __future__ import annotations

from django.utils import timezone

from annotation.activity_services import activity_record
from annotation.models import SourceUpload
from work import runner
from work.single_jobs import JobKind

TASK = "console.tasks.source_upload_run"


def _send(upload_id: int) -> None:
    runner.send(TASK, [[upload_id]])


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


UPLOADS = JobKind(
    name="upload",
    model=SourceUpload,
    send=_send,
    queued=SourceUpload.Status.QUEUED,
    running=SourceUpload.Status.RUNNING,
    abandon=_abandon,
    # The page keeps saying "Importing" until the new task takes the upload over.
    requeue_lost_runs=False,
)
