"""Celery tasks of evaluation: thin, they take ids and call a service. The snapshot and plan tasks
have the job layer's policy (work.runner.job_task: redelivered when their worker dies, retried when
the database connection is lost)."""

from __future__ import annotations

from celery import shared_task

from evaluation import services
from evaluation.planning import plans
from work import runner

PLAN_RUN = "evaluation.tasks.power_plan_run"
SNAPSHOT_COMPUTE = "evaluation.tasks.analysis_snapshot_compute"
COVERAGE_CHECK = "evaluation.tasks.analysis_coverage_check"


@runner.job_task(PLAN_RUN)
def power_plan_run(self, plan_id: int) -> None:
    plans.plan_run(plan_id=plan_id, task_id=self.request.id or "")


@shared_task(name="evaluation.tasks.power_plans_heal", ignore_result=True)
def power_plans_heal() -> int:
    return plans.power_plans_heal()


@runner.job_task(SNAPSHOT_COMPUTE)
def analysis_snapshot_compute_task(self, study_id: int) -> None:
    services.analysis_snapshot_compute(study_id=study_id, task_id=self.request.id or "")


@shared_task(name="evaluation.tasks.analysis_snapshots_heal", bind=True, ignore_result=True)
def analysis_snapshots_heal_task(self) -> int:
    return services.analysis_snapshots_heal(worker=self.request.hostname or "")


@shared_task(name="evaluation.tasks.analysis_snapshots_refresh", ignore_result=True)
def analysis_snapshots_refresh_task() -> None:
    services.analysis_snapshots_refresh()


@shared_task(name=COVERAGE_CHECK, ignore_result=True)
def analysis_coverage_check_task(study_id: int) -> None:
    services.analysis_coverage_check_run(study_id=study_id)


def analysis_coverage_check_send(*, study_id: int) -> None:
    """Send the check of `study_id`'s data (services.analysis_coverage_check) to a worker. In the
    embedded mode the job layer's runner runs it (on a background thread where
    RADLAY_EMBEDDED_TASKS_IN_BACKGROUND is set, so the page that asked is not held up)."""
    runner.send(COVERAGE_CHECK, [[study_id]])


def analysis_snapshot_send(*, study_id: int) -> None:
    """Send the computation of `study_id`'s snapshot to a worker (in the embedded mode, as above)."""
    runner.send(SNAPSHOT_COMPUTE, [[study_id]])
