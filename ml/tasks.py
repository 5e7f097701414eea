"""Celery tasks of the ml app (routed to the `gpu` queue by config/celery_app.py). Thin: they
take ids and call a service."""

from __future__ import annotations

from celery import shared_task

from ml import services
from ml.models import TrainingJob
from work import runner


@runner.job_task(services.TASK)
def training_job_run_task(self, job_id: int) -> str:
    """Run one training job with the job layer's policy (work.runner.job_task). Idempotent: a
    finished job is left alone, and a redelivered or retried task (its worker died, or the database
    connection was lost) resumes from the job's last checkpoint. A failure of the training is
    recorded on the job, and the admin's "retry" action queues it again."""
    job = TrainingJob.objects.get(pk=job_id)
    return services.training_job_run(job=job, task_id=self.request.id or "").status


@shared_task(name="ml.tasks.training_jobs_heal", ignore_result=True)
def training_jobs_heal() -> int:
    return services.training_jobs_heal()
