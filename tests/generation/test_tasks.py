"""The Celery side of generation: thin tasks taking ids, sending after commit, queue routing, and the
embedded (eager) mode running a whole batch without nesting one call per job."""

from __future__ import annotations

import pytest

from annotation.models import Simplification, Study
from config.celery_app import app as celery_app
from generation import tasks
from generation.models import GenerationJob
from generation.services import batches, jobs, outcomes
from studies.source_services import source_upsert


def make_study(n: int) -> Study:
    study = Study.objects.create(slug="tasks", title="tasks")
    for i in range(n):
        source_upsert(study=study, key=f"s{i}", text=f"Mild cardiomegaly, finding {i}.")
    return study


@pytest.fixture
def queued(monkeypatch):
    """Broker mode: record what would be published instead of publishing it."""
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    published: list[tuple[str, list, float | None, str]] = []
    for task in (tasks.generation_job_run_llm, tasks.generation_job_run_gpu):

        def apply_async(args=None, countdown=None, _task=task, **kwargs):
            queue = celery_app.amqp.router.route({}, _task.name)["queue"].name
            published.append((_task.name, list(args), countdown, queue))

        monkeypatch.setattr(task, "apply_async", apply_async)
    yield published
    celery_app.conf.task_always_eager = eager


@pytest.mark.django_db
def test_a_task_takes_a_job_id_and_runs_the_job(monkeypatch):
    monkeypatch.setattr(tasks, "generation_jobs_send", lambda *a, **k: None)
    study = make_study(1)
    batch = batches.generation_batch_create(study=study, systems=["plain_bs"], backend="glossary")
    job = batch.jobs.get()

    tasks.generation_job_run_llm.apply(args=[job.pk], task_id="delivery-1")

    job.refresh_from_db()
    assert job.status == "succeeded" and job.task_id == "delivery-1" and job.attempts == 1
    assert Simplification.objects.get(source__key="s0", system__key="plain_bs").backend == "glossary"


@pytest.mark.django_db
def test_jobs_are_sent_after_the_commit_to_the_queue_of_their_backend(
    queued, django_capture_on_commit_callbacks
):
    study = make_study(3)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        api = batches.generation_batch_create(
            study=study, systems=["plain_bs"], backend="glossary", concurrency=2
        )
        local = batches.generation_batch_create(
            study=study, systems=["cot_bs"], backend="transformers", model_name="/models/t5", concurrency=5
        )
    assert queued == []  # nothing leaves before the commit
    for callback in callbacks:
        callback()
    api_jobs = list(api.jobs.order_by("source__position").values_list("pk", flat=True))
    local_jobs = list(local.jobs.order_by("source__position").values_list("pk", flat=True))
    assert queued == [
        *[("generation.tasks.generation_job_run_llm", [pk], None, "llm") for pk in api_jobs[:2]],
        # A local-model batch goes out as one chunk (run in lockstep on the GPU).
        ("generation.tasks.generation_job_run_gpu", [local_jobs], None, "gpu"),
    ]


@pytest.mark.django_db
def test_a_retry_is_published_with_its_countdown(
    queued, settings, monkeypatch, django_capture_on_commit_callbacks
):
    study = make_study(1)
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(study=study, systems=["plain_bs"], backend="glossary")
    job = batch.jobs.get()

    from generation.backends.base import BackendError

    def overloaded(batch):
        raise BackendError("HTTP 529: overloaded", transient=True)

    monkeypatch.setattr(outcomes, "batch_backend", overloaded)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.generation_job_run(job_id=job.pk)
    name, args, countdown, queue = queued[-1]
    assert (name, args, queue) == ("generation.tasks.generation_job_run_llm", [job.pk], "llm")
    assert 0 < countdown <= 10.0  # the first retry waits up to RADLAY_JOB_TIMING.retry_delay (default 10 s)


@pytest.mark.django_db(transaction=True)
def test_the_embedded_mode_runs_a_batch_one_job_after_another(monkeypatch):
    # transaction=True: on_commit fires at once, as in the embedded mode, so a job that finishes sends
    # the next one while still inside the task that ran it.
    study = make_study(30)
    depth, deepest, order = [0], [0], []
    real_run = jobs.generation_job_run

    def run(*, job_id, task_id=""):
        depth[0] += 1
        deepest[0] = max(deepest[0], depth[0])
        order.append(job_id)
        try:
            return real_run(job_id=job_id, task_id=task_id)
        finally:
            depth[0] -= 1

    monkeypatch.setattr(jobs, "generation_job_run", run)
    batch = batches.generation_batch_create(
        study=study, systems=["plain_bs"], backend="glossary", concurrency=1
    )

    batch.refresh_from_db()
    assert batch.finished_at is not None
    assert GenerationJob.objects.filter(status="succeeded").count() == 30
    assert deepest[0] == 1  # never one job inside another
    assert order == list(batch.jobs.order_by("source__position").values_list("pk", flat=True))


@pytest.mark.django_db
def test_a_lost_database_connection_retries_the_task_which_takes_its_job_over(monkeypatch):
    from django.db import OperationalError

    monkeypatch.setattr(tasks, "generation_jobs_send", lambda *a, **k: None)
    batch = batches.generation_batch_create(study=make_study(1), systems=["plain_bs"], backend="glossary")
    job = batch.jobs.get()
    real_fail, tries = jobs._job_fail, []

    def database_down_once(*args, **kwargs):
        # The job failed (a lost connection mid-job) and recording that failure fails too.
        tries.append(1)
        if len(tries) == 1:
            raise OperationalError("the database system is shutting down")
        return real_fail(*args, **kwargs)

    real_generate = outcomes.jobs_generate

    def generate_once_broken(claimed):
        if len(tries) == 0:
            raise OperationalError("server closed the connection unexpectedly")
        return real_generate(claimed)

    monkeypatch.setattr(jobs, "_job_fail", database_down_once)
    monkeypatch.setattr(outcomes, "jobs_generate", generate_once_broken)
    # Eagerly, the retry runs inside the first try, which then reports "retry".
    tasks.generation_job_run_llm.apply(args=[job.pk], task_id="task-1", throw=False)
    job.refresh_from_db()
    # The retry (same task id) took over the job its first try had claimed, and finished it.
    assert (job.status, job.task_id, job.attempts) == ("succeeded", "task-1", 2)
    assert Simplification.objects.filter(source=job.source).count() == 1
