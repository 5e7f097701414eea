"""Celery tasks of generation: thin, they take job ids and call the service.

Two task names so that config/celery_app.py can route them: API backends to the `llm` queue (one job
per task), local models to the `gpu` queue (one chunk of jobs per task, run in lockstep). acks_late +
reject_on_worker_lost make the broker redeliver a task whose worker died; the service lets that
redelivery take its jobs over (same task id) and never runs a finished job again, so a double
delivery costs at most the calls not yet cached. `generation_batches_heal` is the periodic
self-healing check (Celery beat, and every worker's start: config/celery_app.py).

A lost database connection (a PostgreSQL restart) retries the task with backoff: running a job is
idempotent, and the retry keeps the task id, so it may take over the job its first try claimed.
"""

from __future__ import annotations

import threading
from collections import deque

from celery import shared_task
from django.db import InterfaceError, OperationalError

from generation.backends.registry import GPU_BACKENDS
from generation.services import batches, jobs

DATABASE_RETRY = {
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    "max_retries": 5,
}


@shared_task(
    name="generation.tasks.generation_job_run_llm",
    bind=True,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    **DATABASE_RETRY,
)
def generation_job_run_llm(self, job_id: int) -> None:
    jobs.generation_job_run(job_id=job_id, task_id=self.request.id or "")


@shared_task(
    name="generation.tasks.generation_job_run_gpu",
    bind=True,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    **DATABASE_RETRY,
)
def generation_job_run_gpu(self, job_ids: list[int] | int) -> None:
    # An int is a message queued before chunks existed (one job); the name is kept for the routing.
    chunk = [job_ids] if isinstance(job_ids, int) else list(job_ids)
    jobs.generation_jobs_run(job_ids=chunk, task_id=self.request.id or "")


@shared_task(name="generation.tasks.generation_batches_heal", ignore_result=True)
def generation_batches_heal() -> int:
    return batches.generation_batches_heal()


_eager = threading.local()


def generation_jobs_send(job_ids: list[int], *, backend: str, countdown: float | None = None) -> None:
    """Queue the jobs on the task of their backend's queue: one task per job for an API backend, one
    task for all of `job_ids` (a chunk of one batch and family) for a GPU backend. Call after the
    commit that made them pending (services do it through transaction.on_commit)."""
    if backend in GPU_BACKENDS:
        task, messages = generation_job_run_gpu, [[list(job_ids)]]
    else:
        task, messages = generation_job_run_llm, [[job_id] for job_id in job_ids]
    if not task.app.conf.task_always_eager:
        for args in messages:
            task.apply_async(args=args, countdown=countdown)
        return
    # Embedded mode runs tasks in-process. Each finished job sends the next one, so running them
    # where they are sent would nest one call per job (a deep stack on a big batch); the outermost
    # send runs them one after another instead. Countdowns are not waited for in this mode.
    pending = getattr(_eager, "queue", None)
    if pending is not None:
        pending.extend((task, args) for args in messages)
        return
    _eager.queue = deque((task, args) for args in messages)
    try:
        while _eager.queue:
            next_task, args = _eager.queue.popleft()
            next_task.apply(args=args, throw=True)
    finally:
        _eager.queue = None
