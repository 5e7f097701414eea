"""Sources uploaded in the browser (the console's upload page): the file is streamed to storage,
then a task imports it with `manage.py import_study`'s reader and writer (studies/importers/):
the same shapes (wide or long CSV, JSONL), the same all-or-nothing validation, and re-uploads add
or update as the command does. The task runs on the `heavy` queue; in the embedded mode (no
broker) it runs in the request that queued it, after the commit (work.runner.send)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from annotation.activity_services import activity_record
from annotation.models import SourceUpload, Study
from console.upload_jobs import TASK, UPLOADS
from studies.importers.errors import ImportFormatError
from studies.importers.report_file import SUFFIXES, study_file_open
from studies.importers.write import study_file_import
from work.lease import beating
from work.limits import running_limits_check
from work.single_jobs import job_claim, job_launch, lease_lapsed

logger = logging.getLogger(__name__)

__all__ = ["TASK"]  # the task's name, for console/tasks.py
# How often the running import stamps its progress (and heartbeat), in seconds.
PROGRESS_INTERVAL = 1.0
# Reading (validating) the file is about a third of an import's time, writing the rest.
CHECK_SHARE = 0.3


def source_upload_create(
    *, study: Study, uploaded_file: UploadedFile, user: Any, split_sentences: bool = False
) -> SourceUpload:
    """Store the uploaded file (streamed in chunks: Django keeps a large upload in a temporary
    file, never in memory) and queue its import after the commit. ValidationError names `file` (a
    bad file, or one upload more than the job layer's running limits allow,
    RADLAY_JOB_LIMITS.per_study and per_user). `split_sentences`: a FHIR/HL7 file's reports
    become a source per sentence."""
    name = Path(uploaded_file.name or "").name
    if Path(name).suffix.lower() not in SUFFIXES:
        raise ValidationError(
            {
                "file": f"{name or 'The file'}: use a .csv (wide or long) or .jsonl file, a FHIR Bundle "
                "(.json, .ndjson) or HL7 v2 messages (.hl7)."
            }
        )
    limit = settings.RADLAY_FILE_LIMITS.upload_mb * 1024 * 1024
    if uploaded_file.size and uploaded_file.size > limit:
        largest = settings.RADLAY_FILE_LIMITS.upload_mb
        raise ValidationError({"file": f"{name} is larger than {largest} MB (RADLAY_FILE_LIMITS.upload_mb)."})
    with transaction.atomic():
        running_limits_check(
            running=SourceUpload.objects.filter(
                status__in=(SourceUpload.Status.QUEUED, SourceUpload.Status.RUNNING)
            ),
            study=study,
            user=user,
            noun="upload",
            user_field="uploaded_by",
            field="file",
        )
        upload = SourceUpload(
            study=study,
            original_name=name[:200],
            size=uploaded_file.size or 0,
            uploaded_by=user,
            split_sentences=split_sentences,
            sent_at=timezone.now(),
        )
        upload.file.save(name, uploaded_file, save=False)
        upload.save()
        activity_record(
            study=study,
            actor=user,
            verb="sources.uploaded",
            obj=upload,
            details={"file": name, "bytes": upload.size},
        )
        job_launch(UPLOADS, upload.pk)
    return upload


def source_upload_run(*, upload_id: int, task_id: str = "") -> SourceUpload | None:
    """The task's work: claim the upload, import its file into its study (all or nothing), record
    the outcome (the counts, or the reader's refusal as a row of the error table). A thread stamps
    the progress every PROGRESS_INTERVAL seconds from its own connection, since the import's own
    writes stay invisible until its one transaction commits. None when there was nothing to
    claim (a finished upload, or one another worker runs)."""
    # The job layer's claim: a queued upload, one whose worker died (a stale heartbeat), or one
    # this same task holds already (its retry after a lost database connection keeps the task id).
    if not job_claim(UPLOADS, upload_id, task_id=task_id):
        return None
    upload = SourceUpload.objects.select_related("study", "uploaded_by").get(pk=upload_id)
    outcome: dict[str, Any] = {}
    try:
        study_file = study_file_open(Path(upload.file.path), split_sentences=upload.split_sentences)
        study_file.name = upload.original_name

        def stamp() -> None:
            reading = study_file.bytes_read / study_file.size if study_file.size else 0.0
            writing = study_file.passes >= 2
            progress = CHECK_SHARE + (1 - CHECK_SHARE) * reading if writing else CHECK_SHARE * reading
            SourceUpload.objects.filter(pk=upload.pk, status=SourceUpload.Status.RUNNING).update(
                heartbeat_at=timezone.now(),
                phase="writing" if writing else "checking",
                progress=min(1.0, max(0.0, progress)),
                rows_read=study_file.row_number,
            )

        with beating(stamp, interval=PROGRESS_INTERVAL, name=f"upload-{upload.pk}"):
            _, _, counts = study_file_import(
                slug=upload.study.slug,
                title="",
                study_file=study_file,
                actor=upload.uploaded_by or "console upload",
            )
        outcome = {"status": SourceUpload.Status.SUCCEEDED, "counts": counts, "progress": 1.0}
    except ImportFormatError as exc:
        outcome = {"status": SourceUpload.Status.FAILED, "errors": upload_errors(exc)}
    except ValidationError as exc:
        reasons = (
            [f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()]
            if hasattr(exc, "error_dict")
            else exc.messages
        )
        outcome = {
            "status": SourceUpload.Status.FAILED,
            "errors": [
                {"file": upload.original_name, "row": None, "column": "", "reason": r} for r in reasons
            ],
        }
    except FileNotFoundError:
        outcome = {
            "status": SourceUpload.Status.FAILED,
            "errors": [
                {
                    "file": upload.original_name,
                    "row": None,
                    "column": "",
                    "reason": "the stored file is gone; upload it again.",
                }
            ],
        }
    SourceUpload.objects.filter(pk=upload.pk).update(
        finished_at=timezone.now(), heartbeat_at=None, phase="", **outcome
    )
    if outcome["status"] == SourceUpload.Status.FAILED:
        activity_record(
            study=upload.study,
            actor=upload.uploaded_by or "console upload",
            verb="sources.refused",
            obj=upload,
            details={"file": upload.original_name, "errors": outcome["errors"][:5]},
        )
    # The file served its purpose: its rows are in the study (or were refused); a 100 MB file is
    # not kept twice.
    upload.file.delete(save=False)
    SourceUpload.objects.filter(pk=upload.pk).update(file="")
    upload.refresh_from_db()
    return upload


def upload_errors(exc: ImportFormatError) -> list[dict[str, Any]]:
    """The error table's rows: every row error of the file's check, or the one error."""
    return [upload_error(error) for error in getattr(exc, "problems", None) or [exc]]


def upload_error(exc: ImportFormatError) -> dict[str, Any]:
    """One row of the error table: file, row, column and reason."""
    return {"file": exc.file, "row": exc.row, "column": exc.column or "", "reason": exc.detail}


def upload_is_stalled(*, upload: SourceUpload) -> bool:
    """A running import whose heartbeat stopped: its worker died (nothing of it was written; the
    healing check sends it again, console/upload_heal.py)."""
    return upload.heartbeat_at is not None and lease_lapsed(UPLOADS, upload)
