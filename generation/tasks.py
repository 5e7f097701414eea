"""Celery tasks of generation: thin, they take job ids and call the service.

Two task names so that config/celery_app.py can route them: API backends to the `llm` queue (one job
per task), local models to the `gpu` queue (one chunk of jobs per task, run in lockstep). The task
policy (redelivery of a task whose worker died, database retries) is work.runner's: the service
lets a redelivery take its jobs over (same task id) and never runs a finished job again, so a
double delivery costs at most the calls not yet cached. `generation_batches_heal` is the periodic
self-healing check (Celery beat, and every worker's start: config/celery_app.py).
"""

from __future__ import annotations

from celery import shared_task

from generation.backends.registry import GPU_BACKENDS
from generation.services import batches, jobs
from work import runner

RUN_LLM = "generation.tasks.generation_job_run_llm"
RUN_GPU = "generation.tasks.generation_job_run_gpu"


@runner.job_task(RUN_LLM)
def generation_job_run_llm(self, job_id: int) -> None:
    jobs.generation_job_run(job_id=job_id, task_id=self.request.id or "")


@runner.job_task(RUN_GPU)
def generation_job_run_gpu(self, job_ids: list[int] | int) -> None:
    # An int is a message queued before chunks existed (one job); the name is kept for the routing.
    chunk = [job_ids] if isinstance(job_ids, int) else list(job_ids)
    jobs.generation_jobs_run(job_ids=chunk, task_id=self.request.id or "")


@shared_task(name="generation.tasks.generation_batches_heal", ignore_result=True)
def generation_batches_heal() -> int:
    return batches.generation_batches_heal()


def generation_jobs_send(job_ids: list[int], *, backend: str, countdown: float | None = None) -> None:
    """Queue the jobs on the task of their backend's queue: one task per job for an API backend, one
    task for all of `job_ids` (a chunk of one batch and family) for a GPU backend."""
    if backend in GPU_BACKENDS:
        runner.send(RUN_GPU, [[list(job_ids)]], countdown=countdown)
    else:
        runner.send(RUN_LLM, [[job_id] for job_id in job_ids], countdown=countdown)
