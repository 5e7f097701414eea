"""What a page shows of one piece of background work whose row is its own job (an upload, a power
plan, a training job, an analysis snapshot): the same words and the same template
(templates/work/_job_progress.html) for every kind, read from the job layer's lease columns. A
kind says what its job is doing now (`doing`) and, where it knows, how far it got (`fraction`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from work.selectors import WorkerSilence, worker_silence
from work.single_jobs import JobKind, lease_lapsed


@dataclass(frozen=True)
class JobProgress:
    # "queued" or "running" (the template is for unfinished work; the page shows the outcome).
    state: str
    # What it is doing now, in the kind's words ("Checking every row…").
    doing: str
    # 0..100 where the kind knows how far it got, else None.
    percent: float | None
    started_at: datetime | None
    # When its worker was last heard from (its heartbeat, or its start).
    heard_at: datetime | None
    # How many tasks took it (a lost worker counts), of at most max_attempts.
    attempts: int
    max_attempts: int
    # Why the broker refused its last send ("" when it did not): it starts when the broker is back.
    send_error: str
    # Running, its heartbeat stopped: its worker is gone and the healing check sends it again.
    lease_lapsed: bool
    worker_silence: WorkerSilence | None


def job_progress(kind: JobKind, job: Any, *, doing: str, fraction: float | None = None) -> JobProgress:
    """The progress of an unfinished job of `kind`."""
    return JobProgress(
        state="running" if job.status == kind.running else "queued",
        doing=doing,
        percent=None if fraction is None else round(100 * min(1.0, max(0.0, fraction)), 1),
        started_at=job.started_at,
        heard_at=job.heartbeat_at or job.started_at,
        attempts=job.attempts,
        max_attempts=kind.timing().max_attempts,
        send_error=job.send_error,
        lease_lapsed=lease_lapsed(kind, job),
        worker_silence=worker_silence(),
    )
