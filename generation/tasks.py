"""Celery tasks of generation: thin, they take a job id and call the service.

Two task names so that config/celery_app.py can route them: API backends to the `llm` queue, local
models to the `gpu` queue. acks_late + reject_on_worker_lost (set globally) make the broker redeliver
a job whose worker died; the service lets that redelivery take the job over (same task id) and
never runs a finished job again.
"""

from __future__ import annotations

import threading
from collections import deque

from celery import shared_task

from generation import services
from generation.backends.registry import GPU_BACKENDS


@shared_task(
    name="generation.tasks.generation_job_run_llm",
    bind=True,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
)
def generation_job_run_llm(self, job_id: int) -> None:
    services.generation_job_run(job_id=job_id, task_id=self.request.id or "")


@shared_task(
    name="generation.tasks.generation_job_run_gpu",
    bind=True,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
)
def generation_job_run_gpu(self, job_id: int) -> None:
    services.generation_job_run(job_id=job_id, task_id=self.request.id or "")


_eager = threading.local()


def generation_jobs_send(job_ids: list[int], *, backend: str, countdown: float | None = None) -> None:
    """Queue the jobs on the task of their backend's queue. Call after the commit that made them
    pending (services do it through transaction.on_commit)."""
    task = generation_job_run_gpu if backend in GPU_BACKENDS else generation_job_run_llm
    if not task.app.conf.task_always_eager:
        for job_id in job_ids:
            task.apply_async(args=[job_id], countdown=countdown)
        return
    # Embedded mode runs tasks in-process. Each finished job sends the next one, so running them
    # where they are sent would nest one call per job (a deep stack on a big batch); the outermost
    # send runs them one after another instead. Countdowns are not waited for in this mode.
    pending = getattr(_eager, "queue", None)
    if pending is not None:
        pending.extend((task, job_id) for job_id in job_ids)
        return
    _eager.queue = deque((task, job_id) for job_id in job_ids)
    try:
        while _eager.queue:
            next_task, job_id = _eager.queue.popleft()
            next_task.apply(args=[job_id], throw=True)
    finally:
        _eager.queue = None
