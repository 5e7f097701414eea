"""Celery tasks of evaluation: thin, they take ids and call a service."""

from __future__ import annotations

from celery import shared_task

from evaluation import plans


@shared_task(name="evaluation.tasks.power_plan_run", ignore_result=True, acks_late=True)
def power_plan_run(plan_id: int) -> None:
    plans.plan_run(plan_id=plan_id)
