"""A batch scheduler for jobs run by Celery workers: a concurrency window per batch, an atomic claim,
heartbeats, retries with backoff, and re-queueing of lost jobs. Generic: it knows a job model and a
batch model by their fields, not generation's; an app describes its models and its task in a
`JobQueue` and calls the functions below.

The models
    batch model: concurrency (int ≥ 1), cancelled_at, finished_at (nullable datetimes).
    job model:   a foreign key to the batch (`JobQueue.batch_field`, default "batch"), status
                 (pending | running | succeeded | failed | cancelled), attempts (int), error (text),
                 task_id (char), dispatched_at, not_before, started_at, heartbeat_at, finished_at
                 (nullable datetimes).

The API (every function takes the JobQueue first)
    dispatch(queue, batch=...) -> Dispatch
        Lock the batch row, re-queue its lost jobs, fill its free slots with pending jobs and send
        them after the commit; mark the batch finished when nothing is left to run.
    dispatch_locked(queue, batch) -> Dispatch
        The same inside a transaction that already holds the batch row lock.
    claim(queue, job_id=..., task_id=...) -> job | None
        Take a job for this task: pending → running with one conditional UPDATE, or a running job
        whose heartbeat stopped, or one claimed by this same task id (a broker redelivery).
    heartbeat(queue, job_ids=..., task_id=...)  (context manager)
        While the block runs, a thread stamps heartbeat_at on the claimed jobs every
        `Timing.heartbeat` seconds, so that a dead worker is noticed in seconds.
    succeed(queue, job, record=..., fields=..., dispatch=True) -> job
        Lock the batch, call `record(batch)` (the app's own writes), mark the job succeeded and
        save `fields` with it, then dispatch (all in one transaction).
    fail(queue, job, error=..., transient=..., retry_after=None, dispatch=True) -> job
        Record a failure: a transient one sends the job again after a backoff with jitter (at
        least `retry_after` seconds) until `Timing.max_attempts`; any other ends it as failed.
        The failure of a run that another delivery has since taken over is ignored.
    cancel(queue, batch=...) -> int
        Cancel the batch's pending jobs (running ones finish and are recorded).
    resume(queue, batch=..., retry_failed=False, retry_updates=None) -> Dispatch
        Start a stopped or stalled batch again: cancelled jobs (and failed ones when asked) become
        pending, and every job not done that is not running live is sent again now.
    requeue_lost(queue, batch=None) -> list[Dispatch]
        Dispatch every unfinished batch (or one): the periodic self-healing check.
    raise_if_unsent(queue, result, batch=..., action=...)
        Raise TaskQueueUnreachable (carrying the batch, which exists) when a dispatch's messages
        were refused: launches and resumes of every batch kind report a broker outage this way.

Lost jobs. A running job whose heartbeat is older than `Timing.stale_after` lost its worker; a
pending job sent more than `Timing.dispatch_deadline` ago (counted from its `not_before` when it
waits for a retry) that never started lost its message. Both go back to "never sent" and are sent
again by the next dispatch; a lost running job that already used `max_attempts` fails instead, so
that a source that kills its worker every time cannot loop forever. Sending a job twice is safe:
the claim lets only one delivery run it and a finished job is never run again.

Sending. Jobs are marked dispatched inside the dispatch transaction (so the window counts them) and
sent after the commit; when the broker does not accept the messages, their mark is taken back at
once, `Dispatch.error` says why, and the next dispatch (the periodic check) sends them. So a job is
"dispatched" only while its message is, or was, in the broker.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, Model, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from work import lease, runner

logger = logging.getLogger(__name__)

PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED = "pending", "running", "succeeded", "failed", "cancelled"


@dataclass(frozen=True)
class Timing:
    heartbeat: float = 15.0  # seconds between heartbeats of a running job
    stale_after: float = 60.0  # a running job silent this long lost its worker
    dispatch_deadline: float = 600.0  # a job sent this long ago that never started lost its message
    max_attempts: int = 3
    retry_delay: float = 10.0  # the first retry's backoff ceiling; doubles per attempt, capped at 5 min
    heal_interval: float = 30.0  # how often the healing check runs (a refused send waits this long)

    def retry_countdown(self, attempts: int, retry_after: float | None = None) -> float:
        """Backoff before attempt `attempts + 1`: full jitter, never shorter than the server's
        Retry-After."""
        wait = random.uniform(0.0, min(300.0, self.retry_delay * 2 ** (attempts - 1)))
        return max(wait, retry_after or 0.0)


@dataclass(frozen=True)
class JobQueue:
    job_model: type[Model]
    batch_model: type[Model]
    # Queue these jobs of `batch` (one message or several), after `countdown` seconds when given.
    send: Callable[[Any, list[int], float | None], None]
    timing: Callable[[], Timing] = Timing
    # At most this many jobs of the batch in flight (queued or running).
    slots: Callable[[Any], int] = lambda batch: batch.concurrency
    # The order in which never-sent jobs go out.
    order: Callable[[Any], Sequence[str]] = lambda batch: ("pk",)
    # How jobs sent together are split into messages (default: one message for all of them).
    chunks: Callable[[Any, list[int]], list[list[int]]] = lambda batch, ids: [ids]
    batch_field: str = "batch"
    # Loaded with a claimed job (select_related), for the code that runs it.
    related: Sequence[str] = ()
    # What a batch is called in messages ("batch", "judge run").
    noun: str = "batch"
    # Described in TaskQueueUnreachable's message (e.g. "Redis at redis://host:6379/0").
    broker_label: Callable[[], str] = runner.broker_label
    # Called inside the dispatch's transaction (batch row locked) when the batch becomes finished.
    on_finish: Callable[[Any], None] = lambda batch: None

    # The models' rows through their default manager (`objects`: neither model declares another),
    # typed where `job_model.objects` is unknown to a checker of `type[Model]`.
    @property
    def jobs(self) -> QuerySet[Any]:
        return self.job_model._default_manager.all()

    @property
    def batches(self) -> QuerySet[Any]:
        return self.batch_model._default_manager.all()


class TaskQueueUnreachable(Exception):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """The broker refused a batch's messages; the batch exists (`batch`) and its jobs are sent by
    the next dispatch once the broker is back."""

    def __init__(self, message: str, *, batch: Any):
        super().__init__(message)
        self.batch = batch


@dataclass
class Dispatch:
    """What a dispatch sent. `sent` and `error` are filled once the messages went out (after the
    commit: read them after the outermost transaction)."""

    job_ids: list[int] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    error: str = ""
    finished: bool = False


def raise_if_unsent(queue: JobQueue, result: Dispatch, *, batch: Any, action: str) -> None:
    """Raise TaskQueueUnreachable when the broker refused the messages of `result` (read it after
    the outermost transaction); `action` says what happened to the batch ("created", "resumed")."""
    if result.error:
        raise TaskQueueUnreachable(
            f"{result.error}; {queue.noun} {batch.pk} was {action} and will start when it is back",
            batch=batch,
        )


def timing_from_settings(**overrides: Any) -> Timing:
    """The job layer's timing from the RADLAY_JOB_* settings (read at call time: tests override
    them), with a kind's own `overrides`."""
    heartbeat = float(settings.RADLAY_JOB_TIMING.heartbeat)
    stale = settings.RADLAY_JOB_TIMING.stale_after
    timing = Timing(
        heartbeat=heartbeat,
        stale_after=float(stale) if stale else 4 * heartbeat,
        dispatch_deadline=float(settings.RADLAY_JOB_TIMING.dispatch_deadline),
        max_attempts=max(1, int(settings.RADLAY_JOB_ATTEMPTS)),
        retry_delay=float(settings.RADLAY_JOB_TIMING.retry_delay),
        heal_interval=float(settings.RADLAY_JOB_TIMING.heal_interval),
    )
    return dataclasses.replace(timing, **overrides)


def _jobs(queue: JobQueue, batch: Any):
    return queue.jobs.filter(**{f"{queue.batch_field}_id": batch.pk})


def dispatch(queue: JobQueue, *, batch: Any) -> Dispatch:
    with transaction.atomic():
        locked = queue.batches.select_for_update().get(pk=batch.pk)
        result = dispatch_locked(queue, locked)
    batch.finished_at = locked.finished_at
    return result


def _lost(timing: Timing, now) -> tuple[Q, Q]:
    """(running jobs whose worker is gone, queued jobs whose message is gone)."""
    return (
        Q(status=RUNNING, _beat__lt=now - timedelta(seconds=timing.stale_after)),
        Q(status=PENDING, _due__lt=now - timedelta(seconds=timing.dispatch_deadline)),
    )


def dispatch_locked(queue: JobQueue, batch: Any) -> Dispatch:
    """Call inside a transaction holding the batch row lock."""
    timing = queue.timing()
    now = timezone.now()
    jobs = _jobs(queue, batch).annotate(
        _beat=Coalesce("heartbeat_at", "started_at"), _due=Coalesce("not_before", "dispatched_at")
    )
    lost_running, lost_queued = _lost(timing, now)
    # Lost runs that used up their attempts end here; the others go back to never-sent.
    lost_rows = jobs.filter(lost_running | (lost_queued & Q(dispatched_at__isnull=False))).values_list(
        "pk", "status", "attempts"
    )
    lost: list[tuple[int, int]] = []
    exhausted: list[tuple[int, int]] = []
    for pk, status, attempts in lost_rows:
        (exhausted if status == RUNNING and attempts >= timing.max_attempts else lost).append((pk, attempts))
    for pk, attempts in exhausted:
        queue.jobs.filter(pk=pk).update(
            status=FAILED,
            finished_at=now,
            dispatched_at=None,
            error=f"the worker running this job stopped answering ({attempts} attempt(s)); "
            "it was not retried again",
        )
        logger.warning("job %s failed: its worker stopped answering %s time(s)", pk, attempts)
    if lost and batch.cancelled_at is not None:
        lost_ids = [pk for pk, _ in lost]
        queue.jobs.filter(pk__in=lost_ids).update(
            status=CANCELLED, finished_at=now, dispatched_at=None, not_before=None
        )
    elif lost:
        lost_ids = [pk for pk, _ in lost]
        queue.jobs.filter(pk__in=lost_ids).update(status=PENDING, dispatched_at=None, not_before=None)
        logger.warning("jobs %s were lost (worker or message gone): sending them again", lost_ids)
    counts = jobs.aggregate(
        in_flight=Count("pk", filter=Q(status=RUNNING) | Q(status=PENDING, dispatched_at__isnull=False)),
        pending=Count("pk", filter=Q(status=PENDING)),
        running=Count("pk", filter=Q(status=RUNNING)),
    )
    result = Dispatch()
    cancelled = batch.cancelled_at is not None
    if not cancelled:
        free = queue.slots(batch) - counts["in_flight"]
        if free > 0 and counts["pending"]:
            job_ids = list(
                jobs.filter(status=PENDING, dispatched_at__isnull=True)
                .order_by(*queue.order(batch))
                .values_list("pk", flat=True)[:free]
            )
            if job_ids:
                queue.jobs.filter(pk__in=job_ids).update(dispatched_at=now, not_before=None)
                result.job_ids = job_ids
                chunks = queue.chunks(batch, job_ids)
                transaction.on_commit(lambda: _send(queue, batch, chunks, None, now, result))
    unfinished = counts["running"] + (0 if cancelled else counts["pending"])
    if not unfinished and batch.finished_at is None:
        batch.finished_at = now
        batch.save(update_fields=["finished_at"])
        queue.on_finish(batch)
    result.finished = not unfinished
    return result


def _send(
    queue: JobQueue, batch: Any, chunks: list[list[int]], countdown: float | None, marked_at, result: Dispatch
) -> None:
    for chunk in chunks:
        try:
            queue.send(batch, chunk, countdown)
        except (BrokerError, OSError) as exc:
            unsent = [pk for rest in chunks[chunks.index(chunk) :] for pk in rest]
            # Not in the broker, so not in flight: the next dispatch sends them.
            queue.jobs.filter(pk__in=unsent, status=PENDING, dispatched_at=marked_at).update(
                dispatched_at=None
            )
            result.error = f"the task queue ({queue.broker_label()}) is not reachable: {exc}"
            logger.warning("jobs %s not sent: %s", unsent, result.error)
            return
        result.sent.extend(chunk)


def claim(queue: JobQueue, *, job_id: int, task_id: str) -> Any | None:
    """The job, now running for `task_id`, or None when it may not run (finished, cancelled, or
    running elsewhere with a live heartbeat)."""
    timing = queue.timing()
    now = timezone.now()
    stale = now - timedelta(seconds=timing.stale_after)
    claimable = Q(status=PENDING) | Q(status=RUNNING, heartbeat_at__lt=stale)
    claimable |= Q(status=RUNNING, heartbeat_at__isnull=True, started_at__lt=stale)
    if task_id:
        # The broker redelivers a message only when its worker died before acknowledging it.
        claimable |= Q(status=RUNNING, task_id=task_id)
    # No join in this UPDATE: Django would move every condition into a `pk IN (subquery)`, which
    # PostgreSQL does not re-check against a row another transaction just claimed.
    cancelled = queue.batches.filter(pk=OuterRef(f"{queue.batch_field}_id"), cancelled_at__isnull=False)
    claimed = queue.jobs.filter(claimable, ~Exists(cancelled), pk=job_id).update(
        status=RUNNING,
        attempts=F("attempts") + 1,
        started_at=now,
        heartbeat_at=now,
        finished_at=None,
        not_before=None,
        task_id=task_id,
    )
    if not claimed:
        return None
    return queue.jobs.select_related(*queue.related).get(pk=job_id)


@contextlib.contextmanager
def heartbeat(queue: JobQueue, *, job_ids: Sequence[int], task_id: str) -> Iterator[None]:
    """Stamp heartbeat_at on these running jobs of `task_id` every Timing.heartbeat seconds while
    the block runs (from a thread with its own database connection)."""
    ids = list(job_ids)

    def stamp() -> None:
        with transaction.atomic():
            # SKIP LOCKED: a job whose row is being written (its result) needs no beat, and waiting
            # for that lock would hold up the end of the block.
            live = list(
                queue.jobs.select_for_update(skip_locked=True)
                .filter(pk__in=ids, status=RUNNING, task_id=task_id)
                .values_list("pk", flat=True)
            )
            queue.jobs.filter(pk__in=live).update(heartbeat_at=timezone.now())

    with lease.beating(stamp, interval=queue.timing().heartbeat, name=f"{task_id or ids}"):
        yield


def _still_ours(queue: JobQueue, job: Any) -> bool:
    current = queue.jobs.filter(pk=job.pk).values_list("status", "task_id", "attempts").first()
    return current == (RUNNING, job.task_id, job.attempts)


def succeed(
    queue: JobQueue,
    job: Any,
    *,
    record: Callable[[Any], None] | None = None,
    fields: Sequence[str] = (),
    dispatch: bool = True,
) -> Any:
    """Mark a claimed job succeeded; `record(batch)` and the job's `fields` are written in the same
    transaction, under the batch row lock."""
    with transaction.atomic():
        batch = queue.batches.select_for_update().get(pk=getattr(job, f"{queue.batch_field}_id"))
        if record is not None:
            record(batch)
        job.status, job.error = SUCCEEDED, ""
        job.finished_at, job.dispatched_at = timezone.now(), None
        # Not attempts/task_id/started_at: those belong to the claim.
        job.save(update_fields=["status", "error", "finished_at", "dispatched_at", *fields])
        if dispatch:
            dispatch_locked(queue, batch)
    return job


def fail(
    queue: JobQueue,
    job: Any,
    *,
    error: str,
    transient: bool,
    retry_after: float | None = None,
    fields: Sequence[str] = (),
    dispatch: bool = True,
) -> Any:
    """Record a claimed job's failure (see the module docstring); the job's `fields` are saved
    with it."""
    timing = queue.timing()
    with transaction.atomic():
        batch = queue.batches.select_for_update().get(pk=getattr(job, f"{queue.batch_field}_id"))
        if not _still_ours(queue, job):
            # Another delivery took the job over meanwhile: its outcome stands.
            logger.info("job %s: failure of a superseded run ignored: %s", job.pk, error)
            return job
        job.error = error
        if transient and job.attempts < timing.max_attempts and batch.cancelled_at is None:
            countdown = timing.retry_countdown(job.attempts, retry_after)
            now = timezone.now()
            # The job keeps its concurrency slot while it waits for its retry.
            job.status, job.dispatched_at = PENDING, now
            job.not_before = now + timedelta(seconds=countdown)
            job.save(update_fields=["status", "error", "dispatched_at", "not_before", *fields])
            chunks, result = [[job.pk]], Dispatch(job_ids=[job.pk])
            transaction.on_commit(lambda: _send(queue, batch, chunks, countdown, now, result))
            logger.warning(
                "job %s: transient failure (attempt %s), retry in %.1fs: %s",
                job.pk,
                job.attempts,
                countdown,
                error,
            )
        else:
            job.status, job.finished_at, job.dispatched_at = FAILED, timezone.now(), None
            job.save(update_fields=["status", "error", "finished_at", "dispatched_at", *fields])
            logger.warning("job %s failed after %s attempt(s): %s", job.pk, job.attempts, error)
        if dispatch:
            dispatch_locked(queue, batch)
    return job


def cancel(queue: JobQueue, *, batch: Any) -> int:
    """Cancel the batch's pending jobs (running ones finish and are recorded). Returns how many."""
    with transaction.atomic():
        locked = queue.batches.select_for_update().get(pk=batch.pk)
        now = timezone.now()
        if locked.cancelled_at is None:
            locked.cancelled_at = now
            locked.save(update_fields=["cancelled_at"])
        count = (
            _jobs(queue, locked)
            .filter(status=PENDING)
            .update(status=CANCELLED, finished_at=now, dispatched_at=None)
        )
        dispatch_locked(queue, locked)
    batch.cancelled_at, batch.finished_at = locked.cancelled_at, locked.finished_at
    return count


def resume(
    queue: JobQueue, *, batch: Any, retry_failed: bool = False, retry_updates: dict[str, Any] | None = None
) -> Dispatch:
    """Start a stopped or stalled batch again: cancelled jobs become pending, failed ones too when
    `retry_failed` (on purpose: their attempts start over; `retry_updates` are further fields set
    on them), and every job not done that is not running live is sent again now — sending a job
    twice is harmless. Jobs that succeeded never run again, and a batch with nothing to run keeps
    its finish time."""
    with transaction.atomic():
        locked = queue.batches.select_for_update().get(pk=batch.pk)
        jobs = _jobs(queue, locked)
        reopened = jobs.filter(status=CANCELLED).update(status=PENDING, finished_at=None, dispatched_at=None)
        if retry_failed:
            reopened += jobs.filter(status=FAILED).update(
                status=PENDING, finished_at=None, dispatched_at=None, attempts=0, **(retry_updates or {})
            )
        jobs.filter(status=PENDING).update(dispatched_at=None, not_before=None)
        if locked.cancelled_at is not None or reopened:
            locked.cancelled_at = None
            if reopened:
                locked.finished_at = None
            locked.save(update_fields=["cancelled_at", "finished_at"])
        result = dispatch_locked(queue, locked)
    batch.cancelled_at, batch.finished_at = locked.cancelled_at, locked.finished_at
    return result


def requeue_lost(queue: JobQueue, *, batch: Any | None = None) -> list[Dispatch]:
    """Dispatch each unfinished batch (or only `batch`): re-queues its lost jobs and sends what fits
    its window. Cheap when nothing is lost; run it periodically and when a worker starts."""
    batches = queue.batches.filter(finished_at__isnull=True)
    if batch is not None:
        batches = batches.filter(pk=batch.pk)
    results = []
    for pk in batches.values_list("pk", flat=True):
        results.append(dispatch(queue, batch=queue.batch_model(pk=pk)))
    return results
