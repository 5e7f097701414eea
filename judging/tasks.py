"""Celery tasks of judging: thin, they take ids and call the service. Judge items of an API backend
go to the `llm` queue, of a local model to the `gpu` queue; the agreement to the `heavy` queue (a
bootstrap over the study's answers, kept off the queue the analysis snapshots use). The task policy
(redelivery of a task whose worker died, database retries) is work.runner's."""

from __future__ import annotations

from celery import shared_task

from judging import services
from work import runner

RUN_ITEM = "judging.tasks.judge_item_run"
AGREEMENT = "judging.tasks.judge_run_agreement"


@runner.job_task(RUN_ITEM)
def judge_item_run(self, item_id: int) -> None:
    services.judge_item_run(item_id=item_id, task_id=self.request.id or "")


@runner.job_task(AGREEMENT)
def judge_run_agreement(self, run_id: int) -> None:
    services.judge_run_agreement_run(run_id=run_id)


@shared_task(name="judging.tasks.judge_runs_heal", ignore_result=True)
def judge_runs_heal() -> int:
    return services.judge_runs_heal()


def judge_items_send(item_ids: list[int], *, gpu: bool, countdown: float | None = None) -> None:
    """Queue one task per item on its backend's queue (call after the commit that made them
    pending)."""
    runner.send(
        RUN_ITEM, [[item_id] for item_id in item_ids], queue="gpu" if gpu else "llm", countdown=countdown
    )


def judge_run_agreement_send(run_id: int) -> None:
    """Queue the computation of a run's agreement (call after the commit that asked for it)."""
    runner.send(AGREEMENT, [[run_id]])
