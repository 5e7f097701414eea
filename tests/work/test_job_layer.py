"""The job layer (work/) behaves the same for each of its users: every test runs for a generation
batch and for a judge run. The four behaviours that had drifted between two copies (database retry
of the tasks, a broker outage reported at launch, `--wait` re-sending lost jobs in the embedded
mode, the embedded-mode runner), the faults that are the layer's to heal (transient database
errors of an item, `--wait` through a database outage, stuck jobs named with a Resume), and the
limits on launching heavy work."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotation.models import Study
from generation import selectors as generation_selectors
from generation import tasks as generation_tasks
from generation.models import GenerationBatch, GenerationJob
from generation.services import batches, jobs
from judging import selectors as judging_selectors
from judging import services as judging_services
from judging import tasks as judging_tasks
from judging.models import JudgeItem, JudgeRun
from studies.source_services import source_upsert
from work import runner, scheduler


@dataclass(frozen=True)
class Kind:
    """One user of the job layer, as the tests drive it."""

    name: str
    batch_model: Any
    job_model: Any
    queue: scheduler.JobQueue
    service: tuple[Any, str]  # (module, function) the run task calls
    command: tuple[str, ...]  # launch arguments of its management command (after --study)

    def launch(self, study: Study, **kwargs: Any):
        if self.name == "generation":
            return batches.generation_batch_create(
                study=study, systems=["plain_bs"], backend="glossary", **kwargs
            )
        return judging_services.judge_run_create(
            study=study, backend="glossary", instruments=["radiologist"], **kwargs
        )

    def jobs(self, batch):
        return self.job_model.objects.filter(**{self.queue.batch_field: batch})

    def progress(self, batch):
        if self.name == "generation":
            return generation_selectors.batch_progress(batch=batch)
        return judging_selectors.run_progress(run=batch)

    def page(self, batch) -> str:
        if self.name == "generation":
            return reverse("generation:batch_detail", args=[batch.pk])
        return reverse("judging:run-detail", args=[batch.study.slug, batch.pk])

    def resume_url(self, batch) -> str:
        if self.name == "generation":
            return reverse("generation:batch_resume", args=[batch.pk])
        return reverse("judging:run-resume", args=[batch.study.slug, batch.pk])


GENERATION = Kind(
    "generation",
    GenerationBatch,
    GenerationJob,
    jobs.QUEUE,
    (jobs, "generation_job_run"),
    ("generate", "--systems", "plain_bs", "--backend", "glossary"),
)
JUDGING = Kind(
    "judging",
    JudgeRun,
    JudgeItem,
    judging_services.QUEUE,
    (judging_services, "judge_item_run"),
    ("judge", "--backend", "glossary", "--instruments", "radiologist"),
)


@pytest.fixture(autouse=True)
def quick_agreement(settings):
    settings.RADLAY_JUDGING = replace(settings.RADLAY_JUDGING, bootstrap_resamples=20)


@pytest.fixture(params=[GENERATION, JUDGING], ids=lambda kind: kind.name)
def kind(request) -> Kind:
    return request.param


def make_study(slug: str = "work", n: int = 3) -> Study:
    study = Study.objects.create(slug=slug, title=slug)
    for i in range(n):
        source_upsert(study=study, key=f"s{i}", text=f"Mild cardiomegaly, finding {i}.")
    return study


@pytest.fixture
def swallowed(monkeypatch):
    """A broker nobody consumes: what the layer sends is recorded, not run."""
    sent: list[tuple[str, list]] = []
    monkeypatch.setattr(runner, "send", lambda name, messages, **options: sent.append((name, list(messages))))
    return sent


# --- database auto-retry on every job task ----------------------------------------------------------


@pytest.mark.django_db
def test_a_lost_database_connection_retries_the_task(kind, monkeypatch, swallowed):
    batch = kind.launch(make_study())
    job = kind.jobs(batch).first()
    module, function = kind.service
    real = getattr(module, function)
    calls: list[int] = []

    def flaky(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("terminating connection due to administrator command")
        return real(**kwargs)

    monkeypatch.setattr(module, function, flaky)
    task = {"generation": generation_tasks.generation_job_run_llm, "judging": judging_tasks.judge_item_run}[
        kind.name
    ]
    assert task.acks_late and task.reject_on_worker_lost
    assert set(task.autoretry_for) >= {OperationalError}
    # throw=False: an eager apply then runs the retry itself, as a worker would (same task id).
    task.apply(args=[job.pk], task_id="delivery-1", throw=False)
    job.refresh_from_db()
    assert len(calls) == 2
    assert job.status == "succeeded" and job.attempts == 1, job.error


# --- a refusing broker is reported at launch, the batch exists ----------------------------------------


@pytest.mark.django_db(transaction=True)  # committed for real: the messages go out at the commit
def test_a_launch_with_the_broker_down_creates_the_batch_and_says_so(kind, monkeypatch):
    def refuse(*args, **kwargs):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    monkeypatch.setattr(runner, "send", refuse)
    with pytest.raises(scheduler.TaskQueueUnreachable) as caught:
        kind.launch(make_study())
    batch = kind.batch_model.objects.get()
    assert caught.value.batch == batch
    assert f"{kind.queue.noun} {batch.pk} was created and will start when it is back" in str(caught.value)
    assert not kind.jobs(batch).filter(dispatched_at__isnull=False).exists()


@pytest.mark.django_db(transaction=True)
def test_the_command_reports_a_broker_outage_with_status_2(kind, monkeypatch):
    def refuse(*args, **kwargs):
        raise BrokerError("Connection refused.")

    monkeypatch.setattr(runner, "send", refuse)
    make_study()
    with pytest.raises(CommandError) as caught:
        call_command(kind.command[0], "--study", "work", *kind.command[1:])
    assert caught.value.returncode == 2 and "will start when it is back" in str(caught.value)


# --- --wait re-sends lost jobs (embedded mode), outlives a database outage -----------------------------


@pytest.mark.django_db(transaction=True)
def test_wait_in_the_embedded_mode_sends_lost_jobs_again(kind, monkeypatch, settings, capsys):
    assert runner.embedded_mode()
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, dispatch_deadline=0.0)
    real = runner.send
    dropped: list[str] = []

    def lose_the_first(name, messages, **options):
        if not dropped:
            dropped.append(name)  # the launch's messages are lost (a broker restart)
            return None
        return real(name, messages, **options)

    monkeypatch.setattr(runner, "send", lose_the_first)
    make_study()
    call_command(kind.command[0], "--study", "work", *kind.command[1:], "--wait", "--poll", "0.01")
    batch = kind.batch_model.objects.get()
    assert dropped and batch.finished_at is not None
    assert set(kind.jobs(batch).values_list("status", flat=True)) == {"succeeded"}


@pytest.mark.django_db(transaction=True)
def test_wait_outlives_a_database_outage(kind, monkeypatch, swallowed, capsys):
    """The progress read fails as at a PostgreSQL restart: --wait says so and keeps reporting."""
    monkeypatch.setattr(runner, "embedded_mode", lambda: False)  # workers run the batch
    study = make_study()
    batch = kind.launch(study)
    module = generation_selectors if kind.name == "generation" else judging_selectors
    real = module.work_progress
    polls: list[int] = []

    def restarting(queue, **kwargs):
        polls.append(1)
        if len(polls) == 2:
            raise OperationalError("terminating connection due to administrator command")
        if len(polls) == 3:  # the workers finish the batch meanwhile
            kind.jobs(batch).update(status="succeeded", finished_at=timezone.now())
            kind.batch_model.objects.filter(pk=batch.pk).update(finished_at=timezone.now())
        return real(queue, **kwargs)

    monkeypatch.setattr(module, "work_progress", restarting)
    if kind.name == "judging":
        monkeypatch.setattr(judging_services, "judge_run_agreement_compute", lambda run: {})
    call_command(kind.command[0], "--resume", str(batch.pk), "--wait", "--poll", "0.01")
    out = capsys.readouterr()
    assert "the database is unreachable (terminating connection due to administrator command)" in out.err
    assert "Traceback" not in out.err
    assert "3 succeeded" in out.out


# --- one embedded-mode runner, no nesting ---------------------------------------------------------------


@pytest.mark.django_db
def test_the_embedded_mode_runs_the_jobs_one_after_another(
    kind, monkeypatch, django_capture_on_commit_callbacks
):
    """Each finished job sends the next; the runner runs them in a loop, not nested."""
    import inspect

    module, function = kind.service
    real = getattr(module, function)
    depths: list[int] = []

    def measured(**kwargs):
        depths.append(len(inspect.stack(0)))
        return real(**kwargs)

    monkeypatch.setattr(module, function, measured)
    with django_capture_on_commit_callbacks(execute=True):
        batch = kind.launch(make_study(n=5), concurrency=1)
    batch.refresh_from_db()
    assert batch.finished_at is not None and len(depths) == kind.jobs(batch).count()
    assert max(depths) == min(depths)


# --- a database error during an item is transient, never a permanent failure -------------------------


@pytest.mark.django_db
def test_a_database_error_during_a_job_sends_it_again(kind, monkeypatch, swallowed):
    batch = kind.launch(make_study(n=1))
    job = kind.jobs(batch).first()
    failing = "_item_judge" if kind.name == "judging" else None
    if failing:
        monkeypatch.setattr(
            judging_services, failing, lambda item: (_ for _ in ()).throw(OperationalError("server closed"))
        )
    else:
        from generation.services import outcomes

        monkeypatch.setattr(
            outcomes, "jobs_generate", lambda jobs: (_ for _ in ()).throw(OperationalError("server closed"))
        )
    module, function = kind.service
    getattr(module, function)(
        **{("job_id" if kind.name == "generation" else "item_id"): job.pk, "task_id": "t"}
    )
    job.refresh_from_db()
    assert job.status == "pending" and job.attempts == 1 and job.not_before is not None
    assert "database failed" in job.error


# --- stuck jobs named after the stall threshold, with a Resume button (a POST) -----------------------


@pytest.mark.django_db
def test_the_page_names_jobs_sent_long_ago_that_never_started_and_resume_sends_them(
    kind, client, settings, swallowed, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, stall_after=300)
    batch = kind.launch(make_study(n=2))
    six_minutes_ago = timezone.now() - timedelta(minutes=6)
    kind.batch_model.objects.filter(pk=batch.pk).update(created_at=six_minutes_ago)
    kind.jobs(batch).update(dispatched_at=six_minutes_ago)  # sent, never started: before the 600 s deadline
    admin = get_user_model().objects.create_user("admin", password="pw", is_staff=True, is_superuser=True)
    client.force_login(admin)
    html = client.get(kind.page(batch)).content.decode()
    assert "no progress for 6 minutes" in html
    assert re.search(r"s0 [a-z_ ]+: sent 36\d s ago, never started", html), html
    assert f'action="{kind.resume_url(batch)}"' in html and "Resume now" in html
    swallowed.clear()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(kind.resume_url(batch))
    assert response.status_code == 302
    assert sorted(pk for _, messages in swallowed for args in messages for pk in _ids(args)) == sorted(
        kind.jobs(batch).values_list("pk", flat=True)
    )


def _ids(args: list) -> list[int]:
    return [pk for arg in args for pk in (arg if isinstance(arg, list) else [arg])]


# --- limits on launching heavy work ---------------------------------------------------------------------


@pytest.mark.django_db
def test_launches_past_the_limits_are_refused_with_the_limit_named(kind, settings, swallowed):
    settings.RADLAY_JOB_LIMITS = replace(settings.RADLAY_JOB_LIMITS, per_study=1, per_user=1, batch_size=2)
    researcher = get_user_model().objects.create_user("r", password="pw")
    study, other = make_study(n=2), make_study("other", n=2)
    with pytest.raises(ValidationError) as caught:
        kind.launch(make_study("big", n=3), created_by=researcher)
    assert "RADLAY_JOB_LIMITS.batch_size" in caught.value.message_dict["size"][0]
    kind.launch(study, created_by=researcher)
    with pytest.raises(ValidationError) as caught:
        kind.launch(study)
    assert "RADLAY_JOB_LIMITS.per_study" in caught.value.message_dict["study"][0]
    with pytest.raises(ValidationError) as caught:
        kind.launch(other, created_by=researcher)
    assert "RADLAY_JOB_LIMITS.per_user" in caught.value.message_dict["created_by"][0]
    with pytest.raises(ValidationError) as caught:
        kind.launch(other, concurrency=2**31)
    assert "RADLAY_JOB_LIMITS.batch_concurrency" in caught.value.message_dict["concurrency"][0]
    assert kind.batch_model.objects.count() == 1
    # A finished batch frees its place.
    kind.batch_model.objects.update(finished_at=timezone.now())
    kind.launch(other, created_by=researcher)
