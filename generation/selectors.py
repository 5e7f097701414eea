"""Reads of the generation app: batch progress for the progress bar, batches and their jobs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.selectors import studies_for_user
from generation.models import GenerationBatch, GenerationJob
from generation.services.jobs import timing as jobs_timing

_Status = GenerationJob.Status


@dataclass(frozen=True)
class WorkProgress:
    """Counts and usage of a batch of background model work: a generation batch's jobs or a judge
    run's items (both have the same statuses and usage columns; see work_counts)."""

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


def work_counts(queryset, statuses, **extra) -> tuple[dict[str, Any], dict[str, Any]]:
    """One aggregate over a job/item queryset: (the WorkProgress count and usage fields, the raw
    aggregate with `extra`). `statuses`: the model's Status choices (SUCCEEDED … CANCELLED)."""
    counts = queryset.aggregate(
        total=Count("pk"),
        **{status: Count("pk", filter=Q(status=status)) for status in statuses.values},
        calls=Sum("calls"),
        cached_calls=Sum("cached_calls"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        cost_usd=Sum("cost_usd"),
        **extra,
    )
    fields = {
        "total": counts["total"],
        "succeeded": counts[statuses.SUCCEEDED],
        "failed": counts[statuses.FAILED],
        "running": counts[statuses.RUNNING],
        "pending": counts[statuses.PENDING],
        "cancelled": counts[statuses.CANCELLED],
        "calls": counts["calls"] or 0,
        "cached_calls": counts["cached_calls"] or 0,
        "prompt_tokens": counts["prompt_tokens"] or 0,
        "completion_tokens": counts["completion_tokens"] or 0,
        "cost_usd": counts["cost_usd"] or 0.0,
    }
    return fields, counts


@dataclass(frozen=True)
class BatchProgress(WorkProgress):
    eta: timedelta | None = None
    # Minutes since the last job finished (or the batch started), once past RADLAY_GENERATION_STALL_AFTER.
    stalled_minutes: int | None = None
    # Jobs whose worker (running, heartbeat stopped) or message (sent, never started) looks lost.
    stuck: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def done_percent(self) -> float:
        return self.percent(self.done)

    @property
    def elapsed_text(self) -> str:
        return clock(self.elapsed)

    @property
    def eta_text(self) -> str:
        return clock(self.eta) if self.eta is not None else "—"


def clock(duration: timedelta) -> str:
    """h:mm:ss (whole seconds)."""
    seconds = int(duration.total_seconds())
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _stuck_jobs(batch: GenerationBatch, now: datetime) -> tuple[str, ...]:
    timing = jobs_timing()
    jobs = (
        GenerationJob.objects.filter(batch=batch)
        .annotate(_beat=Coalesce("heartbeat_at", "started_at"), _due=Coalesce("not_before", "dispatched_at"))
        .filter(
            Q(status=_Status.RUNNING, _beat__lt=now - timedelta(seconds=timing.stale_after))
            | Q(status=_Status.PENDING, _due__lt=now - timedelta(seconds=timing.dispatch_deadline))
        )
        .select_related("source")
        .order_by("source__position", "family")
    )
    described = []
    for job in jobs[:20]:
        if job.status == _Status.RUNNING:
            silent = int((now - (job.heartbeat_at or job.started_at)).total_seconds())
            described.append(f"{job.source.key} {job.family}: running, no heartbeat for {silent} s")
        else:
            waiting = int((now - (job.not_before or job.dispatched_at)).total_seconds())
            described.append(f"{job.source.key} {job.family}: sent {waiting} s ago, never started")
    return tuple(described)


def batch_progress(*, batch: GenerationBatch, now: datetime | None = None) -> BatchProgress:
    """Counts, usage and timing of a batch. The ETA extrapolates the mean time per finished job
    (succeeded or failed) since the batch started to the jobs still pending or running, and is
    given only while jobs keep finishing: past RADLAY_GENERATION_STALL_AFTER without one, the batch
    reports how long it has made no progress and which of its jobs look lost instead."""
    now = now or timezone.now()
    fields, counts = work_counts(
        GenerationJob.objects.filter(batch=batch),
        _Status,
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
        if idle.total_seconds() > float(getattr(settings, "RADLAY_GENERATION_STALL_AFTER", 300.0)):
            stalled_minutes = int(idle.total_seconds() // 60)
        elif batch.cancelled_at is None and finished_jobs:
            eta = elapsed / finished_jobs * remaining
        stuck = _stuck_jobs(batch, now)
    return BatchProgress(
        **fields,
        elapsed=elapsed,
        eta=eta,
        finished=batch.finished_at is not None,
        stalled_minutes=stalled_minutes,
        stuck=stuck,
    )


def batch_list(*, user=None, need: str = "view") -> QuerySet[GenerationBatch]:
    """Batches, newest first; with `user`, only those of the studies whose team the user is in
    with a role allowing `need` (every study for a superuser)."""
    batches = GenerationBatch.objects.select_related("study", "model_artifact", "created_by")
    if user is not None:
        batches = batches.filter(study__in=studies_for_user(user=user, need=need))
    return batches


def batch_get(*, batch_id: int, user=None, need: str = "view") -> GenerationBatch:
    return batch_list(user=user, need=need).get(pk=batch_id)


def batch_jobs(*, batch: GenerationBatch, status: str | None = None) -> QuerySet[GenerationJob]:
    """The batch's jobs in source order, with the simplifications each produced."""
    jobs = (
        GenerationJob.objects.filter(batch=batch)
        .select_related("source")
        .prefetch_related("simplifications__system", "simplifications__shown_text")
        .order_by("source__position", "family")
    )
    if status:
        jobs = jobs.filter(status=status)
    return jobs
