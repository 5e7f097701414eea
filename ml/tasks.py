"""Celery tasks of the ml app (routed to the `gpu` queue by config/celery_app.py). Thin: they
take ids and call a service."""

from __future__ import annotations

from celery import shared_task

from ml import services
from ml.models import TrainingJob


@shared_task(bind=True, acks_late=True)
def training_job_run_task(self, job_id: int) -> str:
    """Run one training job. Idempotent: a finished job is left alone, and a redelivered task
    (its worker died) resumes from the job's last checkpoint. Never auto-retried: a failure is
    recorded on the job, and the admin's "retry" action queues it again."""
    job = TrainingJob.objects.get(pk=job_id)
    return services.training_job_run(job=job, task_id=self.request.id or "").status
