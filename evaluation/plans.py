"""Sample-size plans from a pilot study: the database side of evaluation/planning/ (stores a
PowerPlan, runs it, lists a study's plans). The pilot's fit and the simulation are computed by
evaluation/pilot.py, which `plan_run` imports where it runs, so the planning page and its API
load no numpy, scipy or matplotlib."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import F, QuerySet
from django.http import Http404
from django.utils import timezone

from annotation.models import Study
from evaluation.models import PowerPlan


def plan_create(
    *, study: Study, parameters: Mapping[str, Any], user=None, dispatch: bool = True
) -> PowerPlan:
    """Store a plan request (validated by evaluation.forms.PlanForm) and, with `dispatch`, queue
    its computation once the row is committed (the command line runs it itself)."""
    from evaluation.tasks import power_plan_run

    plan = PowerPlan.objects.create(
        study=study, requested_by=user, outcome=parameters["outcome"], parameters=dict(parameters)
    )
    if dispatch:
        transaction.on_commit(lambda: power_plan_run.delay(plan.pk))
    return plan


def plan_run(*, plan_id: int) -> PowerPlan | None:
    """Compute a pending plan. Claimed with one conditional UPDATE, so a redelivered task does
    nothing; any error ends the plan as failed with the reason."""
    claimed = PowerPlan.objects.filter(pk=plan_id, status=PowerPlan.Status.PENDING).update(
        status=PowerPlan.Status.RUNNING, started_at=timezone.now()
    )
    plan = PowerPlan.objects.select_related("study").filter(pk=plan_id).first()
    if not claimed or plan is None:
        return plan
    try:
        # numpy, scipy and matplotlib load here, in the task or command that runs the plan.
        from evaluation.pilot import plan_compute

        result = plan_compute(study=plan.study, parameters=plan.parameters)
    except Exception as error:  # noqa: BLE001 - every failure ends the plan with its reason
        PowerPlan.objects.filter(pk=plan_id).update(
            status=PowerPlan.Status.FAILED,
            error=str(error) or error.__class__.__name__,
            finished_at=timezone.now(),
        )
    else:
        PowerPlan.objects.filter(pk=plan_id).update(
            status=PowerPlan.Status.DONE, result=result, finished_at=timezone.now()
        )
    plan.refresh_from_db()
    return plan


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
