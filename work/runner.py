"""Sending the tasks of scheduled work, and how those tasks behave: written once for every batch
kind (generation's jobs, judging's items, a judge run's agreement).

Tasks are sent by name (`send`), so the scheduler and the services never import an app's tasks
module. With a broker the messages go to the queue the task is routed to; in the embedded mode (no
broker: Celery's task_always_eager) they run in this process, one after another (see `send`).

The task policy (`job_task`): acks_late + reject_on_worker_lost make the broker redeliver a task
whose worker died, and a lost database connection (a PostgreSQL restart) retries the task with
backoff instead of losing its message. Running a job is idempotent and the retry keeps the task id,
so the retry may take over the job its first try claimed. The retries span about as long as the
scheduler's re-send deadline, so that a message taken while the database was down is run once the
database is back, not re-sent only after that deadline.
"""

from __future__ import annotations

import importlib
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

from celery import current_app, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connections

# The errors of a lost database connection: transient, worth another attempt.
DATABASE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)

DATABASE_RETRY: dict[str, Any] = {
    "autoretry_for": DATABASE_ERRORS,
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    # Up to ~15 minutes with the 60 s ceiling: past the 600 s re-send deadline, where healing
    # takes over anyway.
    "max_retries": 16,
}


def job_task(name: str, **options: Any):
    """A Celery task of scheduled work, with the policy above: `@job_task("app.tasks.x")`."""
    return shared_task(
        name=name,
        bind=True,
        ignore_result=True,
        acks_late=True,
        reject_on_worker_lost=True,
        **DATABASE_RETRY,
        **options,
    )


def embedded_mode() -> bool:
    """Tasks run in-process (no broker configured): nothing runs unless a request or command asks."""
    return bool(current_app.conf.task_always_eager)


def broker_label() -> str:
    """The broker as a message names it (as_uri masks a password)."""
    return f"Redis at {current_app.connection_for_write().as_uri()}"


_eager = threading.local()


def _task(name: str):
    """The registered task `name` ("module.function"); its module is imported when autodiscovery
    has not run yet (a command or test that never imported it)."""
    if name not in current_app.tasks:
        importlib.import_module(name.rpartition(".")[0])
    return current_app.tasks[name]


def send(
    task_name: str,
    messages: Sequence[Sequence[Any]],
    *,
    queue: str | None = None,
    countdown: float | None = None,
) -> None:
    """Send one message of the task `task_name` per argument list of `messages` (after `countdown`
    seconds when given, to `queue` or the task's route). Call after the commit that made the jobs
    pending (the scheduler does it through transaction.on_commit).

    Embedded mode: each finished job sends the next one, so running a message where it is sent
    would nest one call per job (a deep stack on a big batch); the outermost send runs every
    message one after another instead. Countdowns are not waited for in this mode."""
    task = _task(task_name)
    if not embedded_mode():
        for args in messages:
            task.apply_async(args=list(args), countdown=countdown, **({"queue": queue} if queue else {}))
        return
    pending = getattr(_eager, "queue", None)
    if pending is not None:
        pending.extend((task, list(args)) for args in messages)
        return
    first = deque((task, list(args)) for args in messages)
    if settings.RADLAY_EMBEDDED_TASKS_IN_BACKGROUND:
        # The request that launched the work returns at once (its page shows the progress); the
        # messages run in a thread of this process, one after another, as they would inline.
        threading.Thread(
            target=_run_in_background, args=(first,), daemon=True, name="radlay-embedded"
        ).start()
        return
    _run_eager(first, throw=True)


def _run_eager(messages: deque, *, throw: bool) -> None:
    _eager.queue = messages
    try:
        while _eager.queue:
            next_task, args = _eager.queue.popleft()
            next_task.apply(args=args, throw=throw)
    finally:
        _eager.queue = None


def _run_in_background(messages: deque) -> None:
    """The embedded mode's background thread: run the messages (and those they send), then close
    the thread's database connection. A job's failure is recorded on the job by its task, so the
    thread goes on with the others."""
    try:
        _run_eager(messages, throw=False)
    finally:
        connections.close_all()
