"""A judge run's agreement is computed under a lease and healed like an item: a
computation whose worker died (heartbeat silent) or whose message was lost (never started) is sent
again by the healing check, and a finished run without one gets one."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from judging import services
from judging import tasks as judging_tasks
from judging.models import JudgeRun
from work import runner

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(study, launch) -> JudgeRun:
    """A run finished in-process, its agreement computed and its lease released."""
    run = launch(study=study, backend="glossary", instruments=["radiologist"])
    assert run.finished_at is not None and run.agreement_computed_at is not None
    assert run.agreement_sent_at is None and run.agreement_heartbeat_at is None
    return run


@pytest.fixture
def sent(run, monkeypatch):
    """What is sent after the run finished, recorded instead of run."""
    calls: list[tuple[str, list]] = []
    monkeypatch.setattr(
        runner, "send", lambda name, messages, **options: calls.append((name, list(messages)))
    )
    return calls


def test_the_agreement_task_is_redelivered_and_retried_like_a_job():
    task = judging_tasks.judge_run_agreement
    assert task.acks_late and task.reject_on_worker_lost
    assert set(task.autoretry_for) == set(runner.DATABASE_ERRORS)


def test_a_computation_whose_worker_died_is_sent_again(
    run, sent, settings, django_capture_on_commit_callbacks
):
    # stale after 4 s
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, heartbeat=1.0)
    now = timezone.now()
    # A recompute was taken by a worker that was killed: its heartbeat stopped 10 s ago.
    JudgeRun.objects.filter(pk=run.pk).update(
        agreement_sent_at=now - timedelta(seconds=30), agreement_heartbeat_at=now - timedelta(seconds=10)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_runs_heal() == 1
    assert sent == [(judging_tasks.AGREEMENT, [[run.pk]])]
    run.refresh_from_db()
    assert run.agreement_heartbeat_at is None and run.agreement_sent_at > now


def test_a_live_or_recently_sent_computation_is_left_alone(
    run, sent, settings, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, heartbeat=1.0)
    now = timezone.now()
    JudgeRun.objects.filter(pk=run.pk).update(
        agreement_sent_at=now - timedelta(seconds=30), agreement_heartbeat_at=now
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_runs_heal() == 0
    # Sent, not started yet, within the re-send deadline: the message may still be in the queue.
    JudgeRun.objects.filter(pk=run.pk).update(
        agreement_sent_at=now - timedelta(seconds=30), agreement_heartbeat_at=None
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_runs_heal() == 0
    assert sent == []


def test_a_lost_message_and_a_run_that_never_got_one_are_sent(
    run, sent, settings, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, dispatch_deadline=60)
    JudgeRun.objects.filter(pk=run.pk).update(agreement_sent_at=timezone.now() - timedelta(seconds=61))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_runs_heal() == 1
    # A finished run from before the lease (or whose finish lost its message): never computed.
    JudgeRun.objects.filter(pk=run.pk).update(
        agreement_sent_at=None, agreement_computed_at=None, agreement={}
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_runs_heal() == 1
    assert [name for name, _ in sent] == [judging_tasks.AGREEMENT] * 2


def test_a_failed_computation_is_recorded_and_not_sent_again(
    run, sent, monkeypatch, django_capture_on_commit_callbacks
):
    JudgeRun.objects.filter(pk=run.pk).update(agreement_computed_at=None, agreement={})

    def broken(*, run, n_resamples=None):
        raise ValueError("no radiologist rated these texts")

    monkeypatch.setattr(services, "judge_run_agreement_result", broken)
    services.judge_run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.agreement_error == "ValueError: no radiologist rated these texts"
    assert run.agreement_sent_at is None and run.agreement_heartbeat_at is None
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_runs_heal() == 0
