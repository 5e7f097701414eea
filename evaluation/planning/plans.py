"""Sample-size plans from a pilot study: the database side of the planner (stores a PowerPlan,
runs it, lists a study's plans). The pilot's fit and the simulation are computed by
evaluation/planning/pilot.py, which `plan_run` imports where it runs, so the planning page and its
API load no numpy, scipy or matplotlib.

A plan is background work on the job layer (work.single_jobs): its task is sent after the commit
(a broker that is down is written on the plan, and the healing check sends it again), a worker
claims it and stamps its heartbeat while it simulates, a plan whose worker died is sent again by
the healing check and given up after RADLAY_JOB_ATTEMPTS lost workers, and the job layer's limits
(RADLAY_JOB_LIMITS.per_study and per_user) count the plans queued or running."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from annotation.models import Study
from evaluation.models import PowerPlan
from work import runner
from work.job_progress import JobProgress, job_progress
from work.limits import running_limits_check
from work.runner import DATABASE_ERRORS
from work.single_jobs import (
    JobKind,
    abandoned_reason,
    job_claim,
    job_launch,
    job_lease,
    jobs_heal,
    silent,
)

# A pending plan whose message was lost (a broker wiped) stops counting as queued after this long.
_PENDING_FORGOTTEN_AFTER = timedelta(days=1)


def _plan_send(plan_id: int) -> None:
    from evaluation.tasks import PLAN_RUN  # tasks import this module

    runner.send(PLAN_RUN, [[plan_id]])


def _plan_abandon(plan: PowerPlan) -> None:
    PowerPlan.objects.filter(pk=plan.pk).update(
        status=PowerPlan.Status.FAILED,
        error=abandoned_reason(PLANS, plan),
        finished_at=timezone.now(),
        heartbeat_at=None,
    )


PLANS = JobKind(
    name="power plan",
    model=PowerPlan,
    send=_plan_send,
    queued=PowerPlan.Status.PENDING,
    running=PowerPlan.Status.RUNNING,
    abandon=_plan_abandon,
)


class PlanLimitReached(ValidationError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """Too many plans of the study or of the researcher are queued or running (429 in the API)."""


def plans_active() -> QuerySet[PowerPlan]:
    """Plans queued or running. A running plan whose heartbeat stopped died with its worker (the
    healing check sends it again), and a pending plan older than a day lost its message: neither
    counts, so a lost plan never blocks new ones for good."""
    now = timezone.now()
    return PowerPlan.objects.filter(
        Q(status=PowerPlan.Status.PENDING, created_at__gte=now - _PENDING_FORGOTTEN_AFTER)
        | (Q(status=PowerPlan.Status.RUNNING) & ~silent(PLANS.timing(), now))
    )


def plan_create(
    *, study: Study, parameters: Mapping[str, Any], user=None, dispatch: bool = True
) -> PowerPlan:
    """Store a plan request (validated by evaluation.planning.forms.PlanForm) and, with `dispatch`, queue
    its computation once the row is committed (the command line runs it itself). A queued plan
    counts against the per-study and per-researcher limits: PlanLimitReached when one is full."""
    with transaction.atomic():
        if dispatch:
            running_limits_check(
                running=plans_active(),
                study=study,
                user=user,
                noun="plan",
                user_field="requested_by",
                error=PlanLimitReached,
            )
        plan = PowerPlan.objects.create(
            study=study,
            requested_by=user,
            outcome=parameters["outcome"],
            parameters=dict(parameters),
            sent_at=timezone.now() if dispatch else None,
        )
        if dispatch:
            job_launch(PLANS, plan.pk)
    return plan


def plan_run(*, plan_id: int, task_id: str = "") -> PowerPlan | None:
    """Compute a pending plan. Claimed with one conditional UPDATE (the job layer's claim), so a
    redelivered task does nothing unless the plan's worker died; any error of the computation ends
    the plan as failed with the reason. A lost database connection is raised: the task's retry
    takes its own claim over."""
    if not job_claim(PLANS, plan_id, task_id=task_id):
        return PowerPlan.objects.select_related("study").filter(pk=plan_id).first()
    plan = PowerPlan.objects.select_related("study").get(pk=plan_id)
    outcome: dict[str, Any]
    try:
        with job_lease(PLANS, plan_id, task_id=task_id):
            # numpy, scipy and matplotlib load here, in the task or command that runs the plan.
            from evaluation.planning.pilot import plan_compute

            result = plan_compute(study=plan.study, parameters=plan.parameters)
    except DATABASE_ERRORS:
        raise
    except Exception as error:  # noqa: BLE001 - every failure ends the plan with its reason
        outcome = {"status": PowerPlan.Status.FAILED, "error": str(error) or error.__class__.__name__}
    else:
        outcome = {"status": PowerPlan.Status.DONE, "result": result}
    # Only the holder of the claim records the outcome: a plan taken over meanwhile is the newer run's.
    PowerPlan.objects.filter(pk=plan_id, status=PowerPlan.Status.RUNNING, task_id=task_id).update(
        finished_at=timezone.now(), heartbeat_at=None, **outcome
    )
    plan.refresh_from_db()
    return plan


def power_plans_heal() -> int:
    """The periodic healing check of the plans (beat, and every worker's start)."""
    return jobs_heal(PLANS)


def plan_progress(*, plan: PowerPlan) -> JobProgress | None:
    """What the plan's page shows while it is queued or simulating (None once it is finished)."""
    if plan.finished:
        return None
    if plan.status == PowerPlan.Status.RUNNING:
        doing = f"Simulating since {timezone.localtime(plan.started_at):%H:%M:%S}…"
    else:
        doing = f"Queued at {timezone.localtime(plan.created_at):%H:%M:%S}, waiting for a worker…"
    return job_progress(PLANS, plan, doing=doing)


def plans_for_study(*, study: Study) -> QuerySet[PowerPlan]:
    return PowerPlan.objects.filter(study=study).order_by(F("created_at").desc(), "-pk")


def access_plan(*, study: Study, plan_id: int) -> PowerPlan:
    """A plan of a study the caller may already see (404 otherwise)."""
    plan = PowerPlan.objects.filter(study=study, pk=plan_id).first()
    if plan is None:
        raise Http404("No such plan for this study.")
    return plan


def plan_latest_done(*, study: Study) -> PowerPlan | None:
    return plans_for_study(study=study).filter(status=PowerPlan.Status.DONE).first()
