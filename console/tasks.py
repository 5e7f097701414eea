"""Celery tasks of the console: thin, they take ids and call a service."""

from __future__ import annotations

from celery import shared_task

from console import upload_heal, upload_services
from work import runner


@runner.job_task(upload_services.TASK)
def source_upload_run(self, upload_id: int) -> None:
    upload_services.source_upload_run(upload_id=upload_id, task_id=self.request.id or "")


@shared_task(name=upload_heal.TASK, ignore_result=True)
def source_uploads_heal() -> int:
    return upload_heal.source_uploads_heal()
