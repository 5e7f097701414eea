"""Writes of the job layer that are not a scheduler's: the stamp that says a worker is running."""

from __future__ import annotations

from django.utils import timezone

from work.models import WORKER_HEARTBEAT, WorkerHeartbeat


def worker_heartbeat_stamp(*, worker: str = "") -> None:
    """Record that a Celery worker (hostname `worker`) is alive now: called by the periodic healing
    check, which beat sends and every worker runs at its start (work.selectors.worker_silence reads
    it)."""
    WorkerHeartbeat.objects.update_or_create(
        name=WORKER_HEARTBEAT, defaults={"seen_at": timezone.now(), "worker": worker}
    )
