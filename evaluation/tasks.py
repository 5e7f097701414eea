"""Celery tasks of evaluation: thin, they take ids and call a service."""

from __future__ import annotations

import threading

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections

from evaluation import plans, services


@shared_task(name="evaluation.tasks.power_plan_run", ignore_result=True, acks_late=True)
def power_plan_run(plan_id: int) -> None:
    plans.plan_run(plan_id=plan_id)


@shared_task(name="evaluation.tasks.analysis_snapshot_compute", ignore_result=True, acks_late=True)
def analysis_snapshot_compute_task(study_id: int) -> None:
    services.analysis_snapshot_compute(study_id=study_id)


@shared_task(name="evaluation.tasks.analysis_snapshots_heal", bind=True, ignore_result=True)
def analysis_snapshots_heal_task(self) -> int:
    return services.analysis_snapshots_heal(worker=self.request.hostname or "")


@shared_task(name="evaluation.tasks.analysis_snapshots_refresh", ignore_result=True)
def analysis_snapshots_refresh_task() -> None:
    services.analysis_snapshots_refresh()


@shared_task(name="evaluation.tasks.analysis_coverage_check", ignore_result=True)
def analysis_coverage_check_task(study_id: int) -> None:
    services.analysis_coverage_check_run(study_id=study_id)


def _run_closing_connections(run, study_id: int) -> None:
    try:
        run(study_id=study_id)
    finally:
        close_old_connections()


def _send(task, run, study_id: int) -> None:
    """`task.delay(study_id)`; in the embedded mode (tasks run in-process, no broker) `run` on a
    background thread of this process when RADLAY_ANALYSIS_IN_THREAD is set, so the page that
    asked is not held up (the test settings turn that off: the task runs where it is sent)."""
    if task.app.conf.task_always_eager and settings.RADLAY_ANALYSIS_IN_THREAD:
        threading.Thread(target=_run_closing_connections, args=(run, study_id), daemon=True).start()
        return
    task.delay(study_id)


def analysis_coverage_check_send(*, study_id: int) -> None:
    """Send the check of `study_id`'s data (services.analysis_coverage_check) to a worker."""
    _send(analysis_coverage_check_task, services.analysis_coverage_check_run, study_id)


def analysis_snapshot_send(*, study_id: int) -> None:
    """Send the computation of `study_id`'s snapshot to a worker."""
    _send(analysis_snapshot_compute_task, services.analysis_snapshot_compute, study_id)
