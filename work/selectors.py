"""Reads of scheduled work: a batch's progress (counts, usage, timing, the jobs that look stuck) for
its page, its list row and `--wait`, the same for every batch kind; and whether any worker is
running at all (worker_silence), which every page of background work shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from work.models import WORKER_HEARTBEAT, ScheduledJob, WorkerHeartbeat
from work.runner import embedded_mode
from work.scheduler import JobQueue

_Status = ScheduledJob.Status


@dataclass(frozen=True)
class WorkProgress:
    """Counts, usage and timing of a batch of background model work: a generation batch's jobs or
    a judge run's items."""

    total: int
    succeeded: int
    failed: int
    running: int
    pending: int
    cancelled: int
    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    elapsed: timedelta
    finished: bool
    eta: timedelta | None = None
    # Minutes since the last job finished (or the batch started), once past RADLAY_JOB_TIMING.stall_after.
    stalled_minutes: int | None = None
    # Jobs whose worker (running, heartbeat stopped) or message (sent, never started) looks lost.
    stuck: tuple[str, ...] = ()

    @property
    def done(self) -> int:
        """Work that will not run again: succeeded, failed or cancelled."""
        return self.succeeded + self.failed + self.cancelled

    def percent(self, count: int) -> float:
        return 100.0 * count / self.total if self.total else 0.0

    @property
    def succeeded_percent(self) -> float:
        return self.percent(self.succeeded)

    @property
    def failed_percent(self) -> float:
        return self.percent(self.failed)

    @property
    def running_percent(self) -> float:
        return self.percent(self.running)

    @property
    def done_percent(self) -> float:
        return self.percent(self.done)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def elapsed_text(self) -> str:
        return clock(self.elapsed)

    @property
    def eta_text(self) -> str:
        return clock(self.eta) if self.eta is not None else "—"

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "running": self.running,
            "pending": self.pending,
            "cancelled": self.cancelled,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "elapsed_seconds": self.elapsed.total_seconds(),
            "finished": self.finished,
        }

    def line(self) -> str:
        """One line of `--wait`'s report."""
        text = (
            f"{self.succeeded} succeeded, {self.failed} failed, {self.running} running, "
            f"{self.pending} pending, {self.cancelled} cancelled · {self.calls} calls "
            f"({self.cached_calls} cached) · {self.tokens} tokens · ${self.cost_usd:.4f} · "
            f"elapsed {self.elapsed_text} · ETA {self.eta_text}"
        )
        if self.stalled_minutes is not None:
            text += f" · no progress for {self.stalled_minutes} minute(s)"
        return text + "".join(f"\n  stuck: {job}" for job in self.stuck)


def clock(duration: timedelta) -> str:
    """h:mm:ss (whole seconds)."""
    seconds = int(duration.total_seconds())
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def stall_after() -> float:
    return float(settings.RADLAY_JOB_TIMING.stall_after)


def stuck_jobs(
    queue: JobQueue,
    *,
    batch: Any,
    describe: Callable[[Any], str],
    related: Sequence[str] = ("source",),
    now: datetime | None = None,
) -> tuple[str, ...]:
    """The batch's jobs that look lost, each as `describe(job)` and why: running with a heartbeat
    older than stale_after (the worker died), or sent longer ago than the stall threshold
    (RADLAY_JOB_TIMING.stall_after, or the re-send deadline when shorter) and never started (the
    message is gone, or the queue is that busy). The healing check re-sends the first kind within a
    minute and the second at the re-send deadline; the page's Resume sends them now."""
    now = now or timezone.now()
    timing = queue.timing()
    unstarted = min(stall_after(), timing.dispatch_deadline)
    jobs = (
        queue.jobs.filter(**{f"{queue.batch_field}_id": batch.pk})
        .annotate(_beat=Coalesce("heartbeat_at", "started_at"), _due=Coalesce("not_before", "dispatched_at"))
        .filter(
            Q(status=_Status.RUNNING, _beat__lt=now - timedelta(seconds=timing.stale_after))
            | Q(status=_Status.PENDING, _due__lt=now - timedelta(seconds=unstarted))
        )
        .select_related(*related)
        .order_by(*queue.order(batch))
    )
    described = []
    for job in jobs[:20]:
        if job.status == _Status.RUNNING:
            silent = int((now - (job.heartbeat_at or job.started_at)).total_seconds())
            described.append(f"{describe(job)}: running, no heartbeat for {silent} s")
        else:
            waiting = int((now - (job.not_before or job.dispatched_at)).total_seconds())
            described.append(f"{describe(job)}: sent {waiting} s ago, never started")
    return tuple(described)


def work_progress(
    queue: JobQueue,
    *,
    batch: Any,
    describe: Callable[[Any], str],
    related: Sequence[str] = ("source",),
    now: datetime | None = None,
) -> WorkProgress:
    """Counts, usage and timing of a batch. The ETA extrapolates the mean time per finished job
    (succeeded or failed) since the batch started to the jobs still pending or running, and is
    given only while jobs keep finishing: past RADLAY_JOB_TIMING.stall_after without one, the batch
    reports how long it has made no progress, and names the jobs that look lost (stuck_jobs)."""
    now = now or timezone.now()
    counts = queue.jobs.filter(**{f"{queue.batch_field}_id": batch.pk}).aggregate(
        total=Count("pk"),
        **{status: Count("pk", filter=Q(status=status)) for status in _Status.values},
        calls=Sum("calls"),
        cached_calls=Sum("cached_calls"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        cost_usd=Sum("cost_usd"),
        last_finished=Max("finished_at", filter=Q(status__in=[_Status.SUCCEEDED, _Status.FAILED])),
    )
    end = batch.finished_at or now
    elapsed = max(end - batch.created_at, timedelta(0))
    finished_jobs = counts[_Status.SUCCEEDED] + counts[_Status.FAILED]
    remaining = counts[_Status.PENDING] + counts[_Status.RUNNING]
    eta = None
    stalled_minutes = None
    stuck: tuple[str, ...] = ()
    if batch.finished_at is None and remaining:
        last_progress = max(counts["last_finished"] or batch.created_at, batch.created_at)
        idle = now - last_progress
        if idle.total_seconds() > stall_after():
            stalled_minutes = int(idle.total_seconds() // 60)
        elif batch.cancelled_at is None and finished_jobs:
            eta = elapsed / finished_jobs * remaining
        stuck = stuck_jobs(queue, batch=batch, describe=describe, related=related, now=now)
    return WorkProgress(
        total=counts["total"],
        succeeded=counts[_Status.SUCCEEDED],
        failed=counts[_Status.FAILED],
        running=counts[_Status.RUNNING],
        pending=counts[_Status.PENDING],
        cancelled=counts[_Status.CANCELLED],
        calls=counts["calls"] or 0,
        cached_calls=counts["cached_calls"] or 0,
        prompt_tokens=counts["prompt_tokens"] or 0,
        completion_tokens=counts["completion_tokens"] or 0,
        cost_usd=counts["cost_usd"] or 0.0,
        elapsed=elapsed,
        eta=eta,
        finished=batch.finished_at is not None,
        stalled_minutes=stalled_minutes,
        stuck=stuck,
    )


@dataclass(frozen=True)
class WorkerSilence:
    """No Celery worker has run the periodic healing check for RADLAY_JOB_TIMING.worker_silent_after seconds
    (`seen_at`: when one last did; None: never)."""

    seen_at: datetime | None


def worker_silence() -> WorkerSilence | None:
    """Whether the pages should say that no worker is running: None when one ran the healing check
    recently, or when tasks run in-process (the embedded mode has no worker to wait for)."""
    if embedded_mode():
        return None
    seen_at = WorkerHeartbeat.objects.filter(name=WORKER_HEARTBEAT).values_list("seen_at", flat=True).first()
    if seen_at is not None and timezone.now() - seen_at < timedelta(
        seconds=settings.RADLAY_JOB_TIMING.worker_silent_after
    ):
        return None
    return WorkerSilence(seen_at=seen_at)
