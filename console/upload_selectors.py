"""Reads of the console's uploads: the progress of an unfinished import, in the job layer's one
progress shape (work.job_progress)."""

from __future__ import annotations

from annotation.models import SourceUpload
from console.upload_jobs import UPLOADS
from work.job_progress import JobProgress, job_progress
from work.single_jobs import lease_lapsed


def upload_progress(*, upload: SourceUpload) -> JobProgress:
    """What the upload's page shows while it is queued or importing."""
    if upload.status == SourceUpload.Status.QUEUED:
        doing = "Waiting for a worker…"
    elif lease_lapsed(UPLOADS, upload):
        doing = "The import stopped answering (its worker was lost); nothing of it was written."
    else:
        doing = "Writing the rows…" if upload.phase == "writing" else "Checking every row…"
        if upload.rows_read:
            doing += f" ({upload.rows_read} rows read)"
    return job_progress(UPLOADS, upload, doing=doing, fraction=upload.progress)
