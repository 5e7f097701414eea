"""Writes of the evaluation app: the analysis snapshots.

A study's analysis is computed by a task (evaluation/tasks.py) into its `AnalysisSnapshot`;
pages, the API and the report only read that row. Recomputation is debounced by two conditional
UPDATEs: `analysis_snapshot_request` moves the row idle → queued and sends the task only when that
UPDATE changed a row (else it marks the queued or running one `dirty`), and
`analysis_snapshot_compute` moves queued → running before it starts. So at most one recomputation
is queued or running per study, and a change during a computation is picked up by exactly one
more run.

How a change of answers reaches here: annotation knows nothing of evaluation (no signal, no
import). Readers of the analysis (the dashboard, the API, the report) call
`analysis_snapshot_refresh`, which compares `analysis_coverage` (a few aggregate queries) with
what the snapshot covered, at most once per RADLAY_ANALYSIS_CHECK_SECONDS per study; a periodic
task (`analysis_snapshots_refresh`, on the beat schedule) does the same for open studies so that
snapshots are fresh before anyone looks. The survey's save path pays nothing for it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Study
from evaluation.analysis import split_details, study_analysis
from evaluation.models import AnalysisSnapshot
from evaluation.plots import all_svgs
from evaluation.selectors import (
    analysis_coverage,
    analysis_options_from_settings,
    analysis_snapshot_get,
    study_frames,
)

logger = logging.getLogger(__name__)

Status = AnalysisSnapshot.Status


@dataclass(frozen=True)
class SnapshotState:
    """What a reader shows: the snapshot (None before the first computation), whether a newer
    one is on its way, and how many answers arrived since it was computed."""

    snapshot: AnalysisSnapshot | None
    recomputing: bool
    answers_since: int
    stale: bool


def _stuck_before() -> timezone.datetime:
    # A task older than its hard time limit died with its worker: its claim may be taken over.
    return timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)


def analysis_snapshot_request(*, study: Study) -> bool:
    """Ask for a recomputation of `study`'s snapshot. Sends the task when this call moved the
    snapshot to queued; otherwise marks the queued/running one dirty. Returns whether it sent.

    Call outside a transaction: the claim is one autocommitted UPDATE, so the task, which may
    start at once in another process, sees it.
    """
    from evaluation.tasks import analysis_snapshot_send

    AnalysisSnapshot.objects.get_or_create(study=study)
    now = timezone.now()
    claimable = Q(status=Status.IDLE) | Q(requested_at__lt=_stuck_before())
    claimed = AnalysisSnapshot.objects.filter(claimable, study=study).update(
        status=Status.QUEUED, requested_at=now, started_at=None, dirty=False
    )
    if not claimed:
        AnalysisSnapshot.objects.filter(study=study).exclude(status=Status.IDLE).update(dirty=True)
        return False
    analysis_snapshot_send(study_id=study.pk)
    return True


def analysis_snapshot_compute(*, study_id: int) -> bool:
    """The task's work: claim the queued snapshot (queued → running), compute the analysis of the
    study's data and its figures, store them with what they covered, and send one more
    recomputation if the data changed meanwhile. Returns False when there was nothing to claim
    (another worker has it, or a redelivered message of a finished task)."""
    claimed = AnalysisSnapshot.objects.filter(
        Q(status=Status.QUEUED) | Q(status=Status.RUNNING, requested_at__lt=_stuck_before()),
        study_id=study_id,
    ).update(status=Status.RUNNING, started_at=timezone.now())
    if not claimed:
        return False
    study = Study.objects.get(pk=study_id)
    stored = _snapshot_store(study=study)
    AnalysisSnapshot.objects.filter(study_id=study_id).update(status=Status.IDLE)
    if AnalysisSnapshot.objects.filter(study_id=study_id, dirty=True).exists():
        analysis_snapshot_request(study=study)
    return stored


def analysis_snapshot_compute_here(*, study: Study) -> AnalysisSnapshot:
    """Compute and store the snapshot in this process, whatever the queue holds (the report and
    analyze commands, which are not web processes and want the data as it is now)."""
    AnalysisSnapshot.objects.get_or_create(study=study)
    _snapshot_store(study=study)
    return AnalysisSnapshot.objects.get(study=study)


def _snapshot_store(*, study: Study) -> bool:
    # Read before the frames: a change made while they are read makes the next check see a
    # difference and recompute, never the other way round.
    coverage = analysis_coverage(study=study)
    started = time.perf_counter()
    try:
        analysis = study_analysis(study_frames(study=study), options=analysis_options_from_settings())
        figures = all_svgs(analysis)
    except Exception as exc:
        logger.exception("analysis of study %s failed", study.slug)
        # Kept on the snapshot and shown where it is read; raising would only make the broker
        # redeliver a computation that fails the same way.
        AnalysisSnapshot.objects.filter(study=study).update(
            error=f"{type(exc).__name__}: {exc}", error_at=timezone.now(), error_coverage=coverage
        )
        return False
    summary, details = split_details(analysis)
    last_answer_at = coverage["last_answer_at"]
    AnalysisSnapshot.objects.filter(study=study).update(
        computed_at=timezone.now(),
        coverage=coverage,
        n_answers=coverage["n_answers"],
        last_answer_at=parse_datetime(last_answer_at) if last_answer_at else None,
        duration_s=time.perf_counter() - started,
        result=summary,
        details=details,
        figures=figures,
        error="",
        error_at=None,
        error_coverage=None,
    )
    return True


def analysis_snapshot_refresh(*, study: Study, force: bool = False) -> SnapshotState:
    """What a reader of the analysis calls: request a recomputation when the study's data no
    longer match the snapshot (checked at most once per RADLAY_ANALYSIS_CHECK_SECONDS per study,
    through the shared cache) or when `force`, and return the state to show."""
    snapshot = analysis_snapshot_get(study=study)
    check_seconds = settings.RADLAY_ANALYSIS_CHECK_SECONDS
    key = f"radlay:analysis-coverage:{study.pk}"
    coverage = cache.get(key) if check_seconds else None
    if coverage is None or force:
        coverage = analysis_coverage(study=study)
        if check_seconds:
            cache.set(key, coverage, timeout=check_seconds)
        stale = snapshot is None or snapshot.result is None or snapshot.coverage != coverage
        failed_on_these_data = snapshot is not None and snapshot.error_coverage == coverage
        if force or (stale and not failed_on_these_data):
            analysis_snapshot_request(study=study)
            snapshot = analysis_snapshot_get(study=study)
    stale = snapshot is None or snapshot.result is None or snapshot.coverage != coverage
    return SnapshotState(
        snapshot=snapshot,
        recomputing=snapshot is not None and snapshot.status != Status.IDLE,
        answers_since=max(0, coverage["n_answers"] - (snapshot.n_answers if snapshot else 0)),
        stale=stale,
    )


def analysis_snapshot_wait(
    *, study: Study, after, timeout: float, poll: float = 0.5
) -> AnalysisSnapshot | None:
    """Wait (polling the row) until the snapshot was computed after `after`; None on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        snapshot = AnalysisSnapshot.objects.filter(study=study, computed_at__gt=after).first()
        if snapshot is not None or time.monotonic() >= deadline:
            return snapshot
        time.sleep(poll)


def analysis_snapshots_refresh() -> int:
    """The beat task's work: refresh the snapshot of every open study whose data changed.
    Returns how many recomputations it sent."""
    sent = 0
    for study in Study.objects.filter(status=Study.Status.OPEN):
        snapshot = analysis_snapshot_get(study=study)
        coverage = analysis_coverage(study=study)
        if snapshot is None or coverage not in (snapshot.coverage, snapshot.error_coverage):
            sent += analysis_snapshot_request(study=study)
    return sent
