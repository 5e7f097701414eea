"""The abstract models of a batch of scheduled jobs (work.scheduler): what the scheduler reads and
writes on a batch and on its jobs. Abstract, so each user app keeps its own tables (generation's
batches and jobs, judging's runs and items). The one table of this app is WorkerHeartbeat: whether
any Celery worker is running at all, which every page of background work asks.

Job states: pending → running → succeeded | failed, or pending → cancelled. A pending job that was
handed to the queue carries `dispatched_at` (it holds one of the batch's concurrency slots); a
running job carries the id of the Celery task that claimed it, so that a redelivered message of that
task may take the job over, and a heartbeat its worker stamps while it runs.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ScheduledBatch(models.Model):
    """A batch of jobs run by work.scheduler: the batch fields it reads and writes
    (a concrete batch adds its own `concurrency`). Judging's runs are such batches too."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def status(self) -> str:
        if self.cancelled_at:
            return "cancelled"
        if self.finished_at:
            return "finished"
        return "running"


class ScheduledJob(models.Model):
    """A job of a ScheduledBatch: the state the scheduler keeps (see work.scheduler) and the
    model usage the job's run records."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    not_before = models.DateTimeField(
        null=True, blank=True, help_text="Retry backoff: not sent before this time."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Stamped every few seconds while a worker runs the job."
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    calls = models.PositiveIntegerField(default=0)
    cached_calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    transcript = models.JSONField(default=list, blank=True)

    class Meta:
        abstract = True


# The WorkerHeartbeat row that the periodic healing check stamps.
WORKER_HEARTBEAT = "celery"


class WorkerHeartbeat(models.Model):
    """When a Celery worker last ran the periodic healing check sent by beat
    (evaluation.tasks.analysis_snapshots_heal_task, which calls work.services.worker_heartbeat_stamp):
    an old or missing stamp means no worker (or no beat) is running, which the pages of background
    work say instead of showing "recomputing…" or "running" for ever. Ephemeral: the next check
    writes it again."""

    name = models.CharField(max_length=40, unique=True)
    seen_at = models.DateTimeField()
    worker = models.CharField(
        max_length=200, blank=True, help_text="The hostname of the worker that ran the check."
    )

    def __str__(self) -> str:
        return f"{self.name} seen at {self.seen_at}"
