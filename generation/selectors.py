"""Reads of the generation app: batch progress for the progress bar, batches and their jobs."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from annotation.selectors import studies_for_user
from generation.models import GenerationBatch, GenerationJob
from generation.services.jobs import QUEUE
from work.selectors import WorkProgress, work_progress


def batch_progress(*, batch: GenerationBatch, now: datetime | None = None) -> WorkProgress:
    """Counts, usage, timing and stuck jobs of a batch (work.selectors.work_progress)."""
    return work_progress(QUEUE, batch=batch, describe=lambda job: f"{job.source.key} {job.family}", now=now)


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
