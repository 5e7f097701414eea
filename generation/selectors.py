"""Reads of the generation app: batch progress for the progress bar, batches and their jobs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from generation.models import GenerationBatch, GenerationJob

_Status = GenerationJob.Status


@dataclass(frozen=True)
class BatchProgress:
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
    eta: timedelta | None
    finished: bool

    @property
    def done(self) -> int:
        """Jobs that will not run again: succeeded, failed or cancelled."""
        return self.succeeded + self.failed + self.cancelled

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

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
    def elapsed_text(self) -> str:
        return clock(self.elapsed)

    @property
    def eta_text(self) -> str:
        return clock(self.eta) if self.eta is not None else "—"


def clock(duration: timedelta) -> str:
    """h:mm:ss (whole seconds)."""
    seconds = int(duration.total_seconds())
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def batch_progress(*, batch: GenerationBatch, now: datetime | None = None) -> BatchProgress:
    """Counts, usage and timing of a batch. The ETA extrapolates the mean time per finished job
    (succeeded or failed) since the batch started to the jobs still pending or running."""
    now = now or timezone.now()
    counts = GenerationJob.objects.filter(batch=batch).aggregate(
        total=Count("pk"),
        **{status: Count("pk", filter=Q(status=status)) for status in _Status.values},
        calls=Sum("calls"),
        cached_calls=Sum("cached_calls"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        cost_usd=Sum("cost_usd"),
    )
    end = batch.finished_at or now
    elapsed = max(end - batch.created_at, timedelta(0))
    finished_jobs = counts[_Status.SUCCEEDED] + counts[_Status.FAILED]
    remaining = counts[_Status.PENDING] + counts[_Status.RUNNING]
    eta = None
    if batch.finished_at is None and batch.cancelled_at is None and finished_jobs and remaining:
        eta = elapsed / finished_jobs * remaining
    return BatchProgress(
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
    )


def batch_list() -> QuerySet[GenerationBatch]:
    return GenerationBatch.objects.select_related("study", "model_artifact", "created_by")


def batch_get(*, batch_id: int) -> GenerationBatch:
    return batch_list().get(pk=batch_id)


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
