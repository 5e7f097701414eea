"""Background work whose row is its own job: an analysis snapshot, a power plan, a training job, a
source upload. They run under the rules of a batch's jobs (work.scheduler), written once here for
the four of them: the same lease, the same healing check, the same attempts limit, the same retry
policy of their tasks (work.runner.job_task) and the same progress (work.job_progress).

An app describes its model in a `JobKind` and calls the functions below; the model has the lease
columns `status`, `sent_at`, `send_error`, `started_at`, `heartbeat_at`, `attempts` and the task
column named by `JobKind.task_field`. Each kind keeps its own status words (a plan is "done", an
upload "succeeded"); the kind names its queued and running ones.

The lease
    job_launch(kind, key)        after the commit, send the queued job (its row says sent_at = now).
    job_send(kind, key)          send it now; a broker that refuses is written on the row
                                 (send_error, sent_at), never raised: the launch is recorded and the
                                 healing check sends it again once the broker is back.
    job_claim(kind, key, task)   take the job for this task: a queued one, a running one whose
                                 heartbeat stopped, or one this same task id holds (the retry of a
                                 task after a lost database connection keeps its id).
    job_lease(kind, key, task)   while the block runs, a thread stamps heartbeat_at.
    jobs_heal(kind)              the periodic check: send again every lost job, abandon (the kind's
                                 `abandon`) one whose worker was lost `max_attempts` times.

Lost jobs, as for a batch's jobs: a running job silent for `Timing.stale_after` lost its worker; a
queued one whose send the broker refused more than a healing interval ago, or sent more than
`Timing.dispatch_deadline` ago and never started, lost its message (one never sent is run by the
command that made it, not by a worker). Sending a job twice
is safe: the claim lets one delivery run it, and a finished job is never claimed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Model, Q
from django.utils import timezone
from kombu.exceptions import KombuError

from work import lease
from work.scheduler import Timing, timing_from_settings

logger = logging.getLogger(__name__)

# What a broker that is down raises when a task is sent (kombu's errors, a refused connection).
SEND_ERRORS: tuple[type[Exception], ...] = (KombuError, OSError)


@dataclass(frozen=True)
class JobKind:
    # What a job of this kind is called in messages ("power plan").
    name: str
    model: type[Model]
    # Hand job `key` to the broker (raises one of SEND_ERRORS when it cannot).
    send: Callable[[Any], None]
    queued: str
    running: str
    # End a job (its row locked) whose worker was lost max_attempts times: its failed state, with
    # abandoned_reason(kind, job) where the kind shows an error.
    abandon: Callable[[Any], None]
    # The column a task's argument names (an analysis snapshot: its study).
    key: str = "pk"
    task_field: str = "task_id"
    # A lost running job goes back to queued (True), or stays running, marked sent again, until
    # the new task claims it (an upload's page keeps saying "Importing").
    requeue_lost_runs: bool = True
    # Further fields written when a lost job is sent again (e.g. a counter of take-overs).
    requeued: Callable[[], dict[str, Any]] = dict
    timing: Callable[[], Timing] = timing_from_settings


def abandoned_reason(kind: JobKind, job: Any) -> str:
    return (
        f"the worker running this {kind.name} stopped answering {job.attempts} time(s) (killed, out "
        "of memory or a lost host); it was not tried again"
    )


def silent(timing: Timing, now: datetime) -> Q:
    """Rows whose heartbeat (or, before the first, their start) is older than stale_after."""
    stale = now - timedelta(seconds=timing.stale_after)
    return Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, started_at__lt=stale)


def lost(kind: JobKind, *, now: datetime | None = None) -> Q:
    """The jobs of `kind` whose worker or message is gone (see the module docstring)."""
    timing = kind.timing()
    now = now or timezone.now()
    worker_lost = Q(status=kind.running) & silent(timing, now)
    if not kind.requeue_lost_runs:
        # Sent again already (and still running until the new task claims it): not lost again yet.
        stale = now - timedelta(seconds=timing.stale_after)
        worker_lost &= Q(sent_at__isnull=True) | Q(sent_at__lt=stale)
    # A queued job never sent (sent_at empty) is run by the command that made it, not a worker.
    message_lost = Q(status=kind.queued) & (
        Q(send_error="", sent_at__lt=now - timedelta(seconds=timing.dispatch_deadline))
        | (~Q(send_error="") & Q(sent_at__lt=now - timedelta(seconds=timing.heal_interval)))
    )
    return worker_lost | message_lost


def lease_lapsed(kind: JobKind, job: Any, *, now: datetime | None = None) -> bool:
    """Whether a running job's heartbeat stopped: its worker is gone (the healing check sends it
    again, or abandons it)."""
    if job.status != kind.running:
        return False
    now = now or timezone.now()
    beat = job.heartbeat_at or job.started_at
    return beat is not None and beat < now - timedelta(seconds=kind.timing().stale_after)


def job_send(kind: JobKind, key: Any) -> bool:
    """Send the job now. A refusal of the broker is kept on the row, not raised (the page that
    asked is not a 500); the healing check sends it again. Returns whether it was sent."""
    try:
        kind.send(key)
    except SEND_ERRORS as exc:
        logger.warning("could not send the %s %s: %s", kind.name, key, exc)
        kind.model._default_manager.filter(**{kind.key: key}, status=kind.queued).update(
            send_error=f"{type(exc).__name__}: {exc}"[:500], sent_at=timezone.now()
        )
        return False
    return True


def job_launch(kind: JobKind, key: Any) -> None:
    """Send the job once the current transaction commits (at once outside one). The job's row is
    queued with sent_at = now."""
    transaction.on_commit(lambda: job_send(kind, key))


def job_claim(kind: JobKind, key: Any, *, task_id: str) -> bool:
    """Take the job for `task_id` with one conditional UPDATE (two deliveries never both take it).
    Returns whether it was taken."""
    now = timezone.now()
    claimable = Q(status=kind.queued) | (Q(status=kind.running) & silent(kind.timing(), now))
    if task_id:
        # The broker redelivers a message only when its worker died before acknowledging it, and a
        # task retried after a lost database connection keeps its id.
        claimable |= Q(status=kind.running, **{kind.task_field: task_id})
    return bool(
        kind.model._default_manager.filter(claimable, **{kind.key: key}).update(
            status=kind.running,
            started_at=now,
            heartbeat_at=now,
            send_error="",
            attempts=F("attempts") + 1,
            **{kind.task_field: task_id},
        )
    )


@contextlib.contextmanager
def job_lease(kind: JobKind, key: Any, *, task_id: str) -> Iterator[None]:
    """Stamp the running job's heartbeat every Timing.heartbeat seconds while the block runs, as
    long as `task_id` holds it (from a thread with its own database connection)."""

    def stamp() -> None:
        kind.model._default_manager.filter(
            **{kind.key: key, "status": kind.running, kind.task_field: task_id}
        ).update(heartbeat_at=timezone.now())

    with lease.beating(stamp, interval=kind.timing().heartbeat, name=f"{kind.name}-{key}"):
        yield


def job_take_over(kind: JobKind, key: Any) -> bool:
    """Send again the job `key` when it is lost (abandon it when its worker was lost max_attempts
    times). Re-checked under the row lock: a worker may have taken it meanwhile. Returns whether it
    acted. Call outside a transaction (the send follows the commit of the row)."""
    timing = kind.timing()
    with transaction.atomic():
        job: Any = (
            kind.model._default_manager.select_for_update(skip_locked=True, of=("self",))
            .filter(lost(kind), **{kind.key: key})
            .first()
        )
        if job is None:
            return False
        if job.status == kind.running and job.attempts >= timing.max_attempts:
            kind.abandon(job)
            logger.warning("%s %s: abandoned after %s lost workers", kind.name, key, job.attempts)
            return True
        fields: dict[str, Any] = {"sent_at": timezone.now(), "send_error": ""}
        if kind.requeue_lost_runs:
            fields.update(status=kind.queued, heartbeat_at=None, **{kind.task_field: ""})
        kind.model._default_manager.filter(pk=job.pk).update(**fields, **kind.requeued())
    logger.warning("%s %s lost its worker or message: sent again", kind.name, key)
    # Sent once the row is committed: the task that takes it must find it queued.
    job_send(kind, key)
    return True


def jobs_heal(kind: JobKind) -> int:
    """The periodic healing check of `kind`: send every lost job again, abandon those past their
    attempts. Returns how many it acted on. Call outside a transaction."""
    keys = list(kind.model._default_manager.filter(lost(kind)).values_list(kind.key, flat=True))
    return sum(job_take_over(kind, key) for key in keys)
