"""Celery tasks of the console: thin, they take ids and call a service."""

from __future__ import annotations

from console import upload_services
from work import runner


@runner.job_task(upload_services.TASK)
def source_upload_run(self, upload_id: int) -> None:
    upload_services.source_upload_run(upload_id=upload_id)
