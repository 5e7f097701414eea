"""Every claimed job ends, lost jobs are sent again, broker outages are reported, garbled answers are
retried, and the batch page tells the truth — through the services, in-process (the scripted
OpenAI-compatible server over HTTP for LLM answers). The same faults against a real worker, Redis
and PostgreSQL are in test_fault_injection.py."""

from __future__ import annotations

import io
import time
from dataclasses import replace
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotation.models import Simplification, Study
from generation import selectors, tasks
from generation.backends.base import BackendError
from generation.backends.openai_backend import OpenAIBackend, RetryPolicy
from generation.models import GenerationBatch, GenerationJob
from generation.services import batches, jobs, outcomes
from tests.generation.factories import study_with_sources
from tests.generation.scripted_llm_server import GARBLES
from work import scheduler

pytestmark = pytest.mark.django_db

SENTENCES = ["Small right pleural effusion.", "Mild cardiomegaly.", "No pneumothorax."]


def make_study(slug: str = "rec", sentences=SENTENCES) -> Study:
    return study_with_sources(slug, sentences)


@pytest.fixture
def llm(settings, scripted_llm, external_calls_approved):
    settings.OPENAI_BASE_URL = scripted_llm.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, timeout=5.0, retries=1, retry_delay=0.01)
    return scripted_llm


def launch_unsent(study, *, capture, **kwargs) -> GenerationBatch:
    kwargs.setdefault("systems", ["plain_bs"])
    kwargs.setdefault("backend", "openai")
    kwargs.setdefault("model_name", "gpt-3.5-turbo")
    with capture(execute=True):
        return batches.generation_batch_create(study=study, **kwargs)


def run_job(job_id: int, capture, task_id: str = "t") -> GenerationJob:
    with capture(execute=True):
        return jobs.generation_job_run(job_id=job_id, task_id=task_id)


# --- every job ends -------------------------------------------------------------------------------


def test_an_empty_answer_is_a_retryable_failure_with_its_reason_then_a_failed_job(
    settings, llm, sent, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_ATTEMPTS = 2
    llm.garble_all("empty")
    batch = launch_unsent(make_study(sentences=SENTENCES[:1]), capture=django_capture_on_commit_callbacks)
    job = batch.jobs.get()

    first = run_job(job.pk, django_capture_on_commit_callbacks)
    assert (first.status, first.attempts) == ("pending", 1)
    assert "the server at http://127.0.0.1:" in first.error and "an empty message" in first.error
    assert sent[-1][0] == [job.pk] and sent[-1][2] is not None  # sent again after a backoff

    last = run_job(job.pk, django_capture_on_commit_callbacks)
    assert (last.status, last.attempts) == ("failed", 2) and "an empty message" in last.error
    batch.refresh_from_db()
    assert batch.finished_at is not None and not Simplification.objects.exists()


def test_an_answer_the_study_cannot_store_fails_the_job_not_the_task(
    settings, llm, sent, monkeypatch, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_ATTEMPTS = 1
    batch = launch_unsent(make_study(sentences=SENTENCES[:2]), capture=django_capture_on_commit_callbacks)
    empty, long = batch.jobs.order_by("source__position")
    real = outcomes.jobs_generate

    def rejected(claimed):
        results = real(claimed)
        for outcome in results:
            text = "" if claimed[0].pk == empty.pk else "word " * 2000
            outcome.outputs[0].text = text
        return results

    monkeypatch.setattr(outcomes, "jobs_generate", rejected)
    assert run_job(empty.pk, django_capture_on_commit_callbacks).error == (
        "the model returned an empty simplification (plain_bs)"
    )
    done = run_job(long.pk, django_capture_on_commit_callbacks)
    assert done.status == "failed" and "over-long simplification (plain_bs: 10000 characters" in done.error
    assert set(batch.jobs.values_list("status", flat=True)) == {"failed"}
    batch.refresh_from_db()
    assert batch.finished_at is not None


def test_a_database_error_while_storing_is_a_transient_job_failure(
    llm, sent, monkeypatch, django_capture_on_commit_callbacks
):
    batch = launch_unsent(make_study(sentences=SENTENCES[:1]), capture=django_capture_on_commit_callbacks)
    job = batch.jobs.get()

    real_store, lost = jobs._store_outputs, [True]

    def connection_lost_once(*args, **kwargs):
        if lost.pop() if lost else False:
            raise OperationalError("server closed the connection unexpectedly")
        return real_store(*args, **kwargs)

    monkeypatch.setattr(jobs, "_store_outputs", connection_lost_once)
    failed = run_job(job.pk, django_capture_on_commit_callbacks)
    assert failed.status == "pending" and failed.attempts == 1
    assert failed.error.startswith("the database failed while storing the result: server closed")
    # The retry replays the cached calls and stores the result.
    calls = len(llm.chat_requests())
    done = run_job(job.pk, django_capture_on_commit_callbacks)
    assert (done.status, done.attempts, done.error) == ("succeeded", 2, "")
    assert len(llm.chat_requests()) == calls and done.cached_calls == done.calls == 1


def test_the_job_level_retry_honours_retry_after(settings, llm, sent, django_capture_on_commit_callbacks):
    settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, retries=0)
    # the backoff alone would be ~0
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, retry_delay=0.001)
    batch = launch_unsent(make_study(sentences=SENTENCES[:1]), capture=django_capture_on_commit_callbacks)
    job = batch.jobs.get()
    llm.fail_next(429, headers={"Retry-After": "2"})
    retried = run_job(job.pk, django_capture_on_commit_callbacks)
    assert retried.status == "pending" and "HTTP 429" in retried.error
    assert sent[-1][0] == [job.pk] and sent[-1][2] >= 2.0
    assert retried.not_before - retried.dispatched_at >= timedelta(seconds=2)


# --- garbled answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "described"),
    [
        ("html", "something other than a chat completion: HTTP 200 text/html"),
        ("invalid-json", "a body that is not valid JSON"),
        ("truncated", "a body that is not valid JSON"),
        ("no-choices", "no choices"),
        ("empty", "an empty message (finish_reason 'stop')"),
    ],
)
def test_garbled_answers_are_readable_transient_errors_retried_up_to_the_limit(scripted_llm, kind, described):
    sleeps: list[float] = []
    backend = OpenAIBackend(
        model="gpt-3.5-turbo",
        base_url=scripted_llm.base_url,
        api_key="k",
        retry=RetryPolicy(max_attempts=3, initial_delay=0.01),
        sleep=sleeps.append,
    )
    from generation.backends.base import GenerationParams

    scripted_llm.garble_next(kind, times=1)
    completion = backend.complete(
        [{"role": "user", "content": "Hi"}], agent="generator", params=GenerationParams()
    )
    assert completion.text == "There are two spots in the liver." and completion.raw["attempts"] == 2

    scripted_llm.garble_all(kind)
    with pytest.raises(BackendError) as caught:
        backend.complete([{"role": "user", "content": "Hi"}], agent="generator", params=GenerationParams())
    message = str(caught.value)
    assert caught.value.transient and "failed after 3 attempts" in message
    assert f"the server at {scripted_llm.base_url}" in message and described in message
    assert len(sleeps) == 1 + 2
    if kind == "html":
        assert "502 Bad Gateway" in message
    assert kind in GARBLES


# --- lost jobs, self-healing ------------------------------------------------------------------------


def test_the_periodic_check_sends_lost_jobs_again_and_fails_those_out_of_attempts(
    settings, sent, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, heartbeat=5, dispatch_deadline=60)
    settings.RADLAY_JOB_ATTEMPTS = 3
    study = make_study()
    batch = launch_unsent(
        study, capture=django_capture_on_commit_callbacks, backend="glossary", model_name=""
    )
    silent, queued, worn = batch.jobs.order_by("source__position")
    now = timezone.now()
    # Running, no heartbeat for 30 s (> 4 × 5 s): its worker is gone.
    GenerationJob.objects.filter(pk=silent.pk).update(
        status="running",
        attempts=1,
        started_at=now - timedelta(minutes=5),
        heartbeat_at=now - timedelta(seconds=30),
    )
    # Sent two minutes ago and never started: its message is gone.
    GenerationJob.objects.filter(pk=queued.pk).update(dispatched_at=now - timedelta(minutes=2))
    # Lost on its last attempt (a source that kills its worker every time).
    GenerationJob.objects.filter(pk=worn.pk).update(
        status="running",
        attempts=3,
        started_at=now - timedelta(minutes=5),
        heartbeat_at=now - timedelta(minutes=5),
    )
    # A live one elsewhere is left alone.
    other = launch_unsent(make_study("live"), capture=django_capture_on_commit_callbacks, backend="glossary")
    live = other.jobs.first()
    GenerationJob.objects.filter(pk=live.pk).update(status="running", started_at=now, heartbeat_at=now)
    sent.clear()

    with django_capture_on_commit_callbacks(execute=True):
        assert batches.generation_batches_heal() == 2
    assert sorted(pk for ids, _, _ in sent for pk in ids) == sorted([silent.pk, queued.pk])
    worn.refresh_from_db()
    assert worn.status == "failed" and "stopped answering (3 attempt(s))" in worn.error
    assert GenerationJob.objects.get(pk=live.pk).status == "running"
    # Nothing is lost any more: a second check sends nothing.
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert batches.generation_batches_heal() == 0
    assert sent == []


def test_a_lost_job_of_a_cancelled_batch_is_cancelled_and_the_batch_finishes(
    settings, sent, django_capture_on_commit_callbacks
):
    batch = launch_unsent(
        make_study(sentences=SENTENCES[:2]), capture=django_capture_on_commit_callbacks, backend="glossary"
    )
    lost, queued = batch.jobs.order_by("source__position")
    long_ago = timezone.now() - timedelta(hours=1)
    GenerationJob.objects.filter(pk=lost.pk).update(
        status="running", started_at=long_ago, heartbeat_at=long_ago
    )
    assert batches.generation_batch_cancel(batch=batch) == 1
    assert batch.finished_at is not None
    assert dict(batch.jobs.values_list("pk", "status")) == {lost.pk: "cancelled", queued.pk: "cancelled"}


@pytest.mark.heavy
def test_a_live_heartbeat_keeps_a_long_job_from_being_taken_over(settings, transactional_db, monkeypatch):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, heartbeat=0.1, stale_after=0.5)
    study = make_study(sentences=SENTENCES[:1])
    monkeypatch.setattr(tasks, "generation_jobs_send", lambda *a, **k: None)
    batch = batches.generation_batch_create(study=study, systems=["plain_bs"], backend="glossary")
    job = batch.jobs.get()
    real = outcomes.jobs_generate
    seen = {}

    def slow(claimed):
        # Runs for well past the stale deadline, until the heartbeat has moved on by twice that.
        started = GenerationJob.objects.get(pk=job.pk).started_at
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.2)
            seen["beating for"] = GenerationJob.objects.get(pk=job.pk).heartbeat_at - started
            if seen["beating for"] > timedelta(seconds=1):
                break
        seen["claimed by another"] = jobs.generation_job_run(job_id=job.pk, task_id="intruder").task_id
        return real(claimed)

    monkeypatch.setattr(outcomes, "jobs_generate", slow)
    done = jobs.generation_job_run(job_id=job.pk, task_id="owner")
    assert seen["beating for"] > timedelta(seconds=1)
    assert seen["claimed by another"] == "owner"
    done.refresh_from_db()
    assert (done.status, done.attempts, done.task_id) == ("succeeded", 1, "owner")


def test_plain_resume_sends_again_what_is_not_done_and_keeps_a_finished_batchs_time(
    settings, llm, sent, django_capture_on_commit_callbacks
):
    study = make_study()
    batch = launch_unsent(study, capture=django_capture_on_commit_callbacks, concurrency=3)
    first, second, third = batch.jobs.order_by("source__position")
    # The first lost its worker, the second its message; the third runs live.
    long_ago = timezone.now() - timedelta(hours=1)
    GenerationJob.objects.filter(pk=first.pk).update(
        status="running", started_at=long_ago, heartbeat_at=long_ago
    )
    GenerationJob.objects.filter(pk=third.pk).update(
        status="running", started_at=timezone.now(), task_id="live-task"
    )
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        resent = batches.generation_batch_resume(batch=batch)
    assert sorted(resent) == sorted([first.pk, second.pk])
    for job_id in resent:
        run_job(job_id, django_capture_on_commit_callbacks)
    run_job(third.pk, django_capture_on_commit_callbacks, task_id="live-task")  # its live run
    batch.refresh_from_db()
    finished_at = batch.finished_at
    assert finished_at is not None

    with django_capture_on_commit_callbacks(execute=True):
        assert batches.generation_batch_resume(batch=batch) == []
    batch.refresh_from_db()
    assert batch.finished_at == finished_at


# --- broker outages -------------------------------------------------------------------------------


@pytest.fixture
def broker_down(monkeypatch):
    def refuse(job_ids, *, backend, countdown=None):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    monkeypatch.setattr(tasks, "generation_jobs_send", refuse)


@pytest.mark.django_db(transaction=True)  # committed for real: the messages go out at the commit
def test_a_launch_with_the_broker_down_creates_the_batch_and_says_so(llm, broker_down):
    study = make_study()
    with pytest.raises(scheduler.TaskQueueUnreachable) as caught:
        batches.generation_batch_create(study=study, systems=["plain_bs"], backend="openai", model_name="m")
    batch = GenerationBatch.objects.get()
    assert caught.value.batch == batch
    assert str(caught.value).startswith("the task queue (Redis at ")
    assert f"batch {batch.pk} was created and will start when it is back" in str(caught.value)
    # Nothing counts as in flight: the periodic check sends all of them once the broker is back.
    assert not batch.jobs.filter(dispatched_at__isnull=False).exists()


@pytest.mark.django_db(transaction=True)
def test_the_command_and_the_pages_report_a_broker_outage_without_a_traceback(client, llm, broker_down):
    study = make_study()
    with pytest.raises(CommandError) as caught:
        call_command(
            "generate",
            *["--study", study.slug, "--systems", "plain_bs", "--backend", "openai", "--model", "m"],
            stdout=io.StringIO(),
        )
    batch = GenerationBatch.objects.get()
    assert caught.value.returncode == 2
    assert "is not reachable" in str(caught.value) and f"batch {batch.pk} was created" in str(caught.value)

    admin = get_user_model().objects.create_user("admin", password="pw", is_staff=True, is_superuser=True)
    client.force_login(admin)
    response = client.post(reverse("generation:batch_resume", args=[batch.pk]), follow=True)
    assert response.status_code == 200
    assert f"batch {batch.pk} was resumed and will start when it is back" in response.content.decode()

    launch = reverse("admin:generation_generationbatch_launch")
    data = {
        "study": study.pk,
        "systems": ["plain_bs"],
        "backend": "openai",
        "model_name": "m",
        "temperature": "0.8",
        "max_rounds": "5",
        "max_tokens": "512",
        "sample_index": "0",
        "prompt_version": "seed003-v1",
        "concurrency": "2",
    }
    response = client.post(launch, data, follow=True)
    second = GenerationBatch.objects.latest("pk")
    assert response.status_code == 200 and second.pk != batch.pk
    assert f"batch {second.pk} was created and will start when it is back" in response.content.decode()


# --- the batch page tells the truth ---------------------------------------------------------------


def test_a_stalled_batch_shows_no_progress_and_its_lost_jobs_instead_of_an_eta(
    settings, sent, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, stall_after=120)
    batch = launch_unsent(
        make_study(), capture=django_capture_on_commit_callbacks, backend="glossary", model_name=""
    )
    first, second, third = batch.jobs.order_by("source__position")
    start = batch.created_at
    GenerationJob.objects.filter(pk=first.pk).update(
        status="succeeded", finished_at=start + timedelta(seconds=10)
    )
    GenerationJob.objects.filter(pk=second.pk).update(
        status="running", started_at=start + timedelta(seconds=11), heartbeat_at=start + timedelta(seconds=20)
    )
    GenerationJob.objects.filter(pk=third.pk).update(dispatched_at=start)

    moving = selectors.batch_progress(batch=batch, now=start + timedelta(seconds=30))
    assert moving.eta is not None and moving.stalled_minutes is None and moving.stuck == ()

    later = start + timedelta(minutes=12, seconds=10)
    stalled = selectors.batch_progress(batch=batch, now=later)
    assert stalled.eta is None and stalled.stalled_minutes == 12
    assert stalled.stuck == (
        "s2 plain: running, no heartbeat for 710 s",
        "s3 plain: sent 730 s ago, never started",
    )


def test_the_page_of_a_stalled_batch_names_its_stuck_jobs(
    client, settings, sent, monkeypatch, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, stall_after=60)
    batch = launch_unsent(
        make_study(), capture=django_capture_on_commit_callbacks, backend="glossary", model_name=""
    )
    long_ago = timezone.now() - timedelta(minutes=7)
    GenerationBatch.objects.filter(pk=batch.pk).update(created_at=long_ago)
    GenerationJob.objects.filter(batch=batch).update(
        status="running", started_at=long_ago, heartbeat_at=long_ago, attempts=scheduler.Timing().max_attempts
    )
    admin = get_user_model().objects.create_user("admin", password="pw", is_staff=True, is_superuser=True)
    client.force_login(admin)
    html = client.get(reverse("generation:batch_detail", args=[batch.pk])).content.decode()
    assert "no progress for 7 minutes" in html and "ETA" not in html
    assert "s1 plain: running, no heartbeat for 4" in html
