"""Celery tasks of judging: thin, they take ids and call the service. Judge items of an API backend
go to the `llm` queue, of a local model to the `gpu` queue; the agreement to `default`."""

from __future__ import annotations

import threading
from collections import deque

from celery import shared_task

from judging import services
from judging.models import JudgeRun


@shared_task(
    name="judging.tasks.judge_item_run",
    bind=True,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
)
def judge_item_run(self, item_id: int) -> None:
    services.judge_item_run(item_id=item_id, task_id=self.request.id or "")


@shared_task(name="judging.tasks.judge_run_agreement", ignore_result=True)
def judge_run_agreement(run_id: int) -> None:
    run = JudgeRun.objects.filter(pk=run_id).select_related("study").first()
    if run is not None:
        services.judge_run_agreement_compute(run=run)


@shared_task(name="judging.tasks.judge_runs_heal", ignore_result=True)
def judge_runs_heal() -> int:
    return services.judge_runs_heal()


_eager = threading.local()


def judge_items_send(item_ids: list[int], *, gpu: bool, countdown: float | None = None) -> None:
    """Queue one task per item on its backend's queue (call after the commit that made them
    pending). In embedded mode, tasks run in-process one after another rather than nested: each
    finished item sends the next, which would otherwise grow the stack by one run per item."""
    queue = "gpu" if gpu else "llm"
    if not judge_item_run.app.conf.task_always_eager:
        for item_id in item_ids:
            judge_item_run.apply_async(args=[item_id], queue=queue, countdown=countdown)
        return
    pending = getattr(_eager, "queue", None)
    if pending is not None:
        pending.extend(item_ids)
        return
    _eager.queue = deque(item_ids)
    try:
        while _eager.queue:
            judge_item_run.apply(args=[_eager.queue.popleft()], throw=True)
    finally:
        _eager.queue = None
