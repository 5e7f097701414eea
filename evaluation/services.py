"""Writes of the evaluation app: the analysis snapshots.

A study's analysis is computed by a task (evaluation/tasks.py) into its `AnalysisSnapshot`;
pages, the API and the report only read that row. Recomputation is debounced by two conditional
UPDATEs: `analysis_snapshot_request` moves the row idle → queued and sends the task only when that
UPDATE changed a row (else it marks the queued or running one `dirty`), and
`analysis_snapshot_compute` moves queued → running before it starts. So at most one recomputation
is queued or running per study, and a change during a computation is picked up by exactly one
more run.

How a change of answers reaches here: annotation knows nothing of evaluation (no signal, no
import). `analysis_coverage_check` compares `analysis_coverage` (one aggregate per answer table,
so its time grows with the study: about a second at 20 000 sources × 20 laypeople) with what the
snapshot covered, requests a recomputation when they differ, and keeps what it counted, with when,
in the shared cache. Readers of the analysis (the dashboard, the API, the report) call
`analysis_snapshot_refresh`, which reads that count and, when it is older than
RADLAY_ANALYSIS_CHECK_SECONDS (or missing), sends a check to a worker (one at a time per study)
instead of counting in the request; the page says it is checking and polls. A snapshot that lands
leaves the count it was computed from, and a periodic task (`analysis_snapshots_refresh`, on the
beat schedule) checks open studies so that snapshots are fresh before anyone looks. With
RADLAY_ANALYSIS_CHECK_SECONDS = 0, and for a forced refresh, the check runs in the request. The
survey's save path pays nothing for any of it.

The pages import this module for the snapshot bookkeeping; the analysis and its figures (pandas,
scipy, matplotlib) are imported where they are computed, in `study_analysis_compute` and
`_snapshot_store`, so a web worker never loads them.
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Source, Study, System
from evaluation.analysis_document import split_details
from evaluation.models import AnalysisSnapshot, SystemMetrics, TextMetrics
from evaluation.selectors import (
    analysis_coverage,
    analysis_snapshot_get,
    system_metrics_stored,
    text_metrics_stored,
)

if TYPE_CHECKING:
    from evaluation.analysis import AnalysisOptions
    from evaluation.metrics.registry import MetricRecord, MetricValue

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
    # A check of the study's data is on its way: `answers_since` and `stale` are those of the
    # last check (none yet: 0 and False).
    checking: bool = False


# --- stored per-text metrics -----------------------------------------------------------------------

# Rows per INSERT / DELETE statement (SQLite's default limit is 32 766 parameters).
_TEXT_METRICS_BATCH = 2000


def _storable(values: Mapping[str, MetricValue]) -> dict[str, Any]:
    return {
        name: value if value is None or math.isfinite(value) else ("inf" if value > 0 else "-inf")
        for name, value in values.items()
    }


class TextMetricsStore:
    """The database behind evaluation.metrics.registry's TextMetricStore for one study's texts and
    systems (see TextMetrics and SystemMetrics for when a stored row is used)."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self._source_ids: dict[str, int] | None = None

    def load(self, kind: str, family: str, configuration: str) -> dict[str, dict[str, MetricValue]]:
        return text_metrics_stored(study=self.study, kind=kind, configuration=configuration)

    def save(
        self,
        kind: str,
        family: str,
        configuration: str,
        rows: Sequence[tuple[MetricRecord, str, Mapping[str, MetricValue]]],
    ) -> None:
        """All of `rows` in one transaction; a row another analysis stored meanwhile is kept."""
        if self._source_ids is None:
            self._source_ids = dict(Source.objects.filter(study=self.study).values_list("key", "pk"))
        objects = [
            TextMetrics(
                source_id=self._source_ids[record.source],
                kind=kind,
                family=family,
                configuration=configuration,
                inputs=digest,
                scores=_storable(values),
            )
            for record, digest, values in rows
        ]
        with transaction.atomic():
            TextMetrics.objects.bulk_create(objects, batch_size=_TEXT_METRICS_BATCH, ignore_conflicts=True)

    def discard(self, kind: str, family: str, configuration: str, digests: Collection[str]) -> None:
        digests = list(digests)
        with transaction.atomic():
            for start in range(0, len(digests), _TEXT_METRICS_BATCH):
                TextMetrics.objects.filter(
                    source__study=self.study,
                    kind=kind,
                    configuration=configuration,
                    inputs__in=digests[start : start + _TEXT_METRICS_BATCH],
                ).delete()

    def load_corpus(self, family: str, configuration: str) -> dict[str, tuple[str, dict[str, MetricValue]]]:
        return system_metrics_stored(study=self.study, configuration=configuration)

    def save_corpus(
        self, family: str, configuration: str, system: str, inputs: str, values: Mapping[str, MetricValue]
    ) -> None:
        system_row = System.objects.filter(study=self.study, key=system).first()
        if system_row is None:
            return
        SystemMetrics.objects.update_or_create(
            system=system_row,
            configuration=configuration,
            defaults={"family": family, "inputs": inputs, "scores": _storable(values)},
        )


def _freed_memory_returned() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim; nothing elsewhere).
    Reading a large study's frames frees a few hundred MB of row buffers in pieces that glibc
    keeps in its heap, so the process would carry them into the metrics' peak (Dask's workers
    trim for the same reason)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.malloc_trim(0)


def study_analysis_compute(*, study: Study, options: AnalysisOptions | None = None) -> dict:
    """The analysis of `study`'s data now, its automatic per-text metrics read from the database
    where stored and stored where not (TextMetricsStore). For workers and commands, never a web
    request."""
    # pandas, scipy, scikit-learn and the metrics load here, in the task or command that computes.
    from evaluation.analysis import study_analysis
    from evaluation.analysis_inputs import analysis_options_from_settings, study_frames

    options = options or analysis_options_from_settings()
    frames = study_frames(study=study)
    _freed_memory_returned()
    return study_analysis(frames, options=options, store=TextMetricsStore(study))


# --- analysis snapshots ----------------------------------------------------------------------------


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
    # difference and recompute, never the other way round. Kept as the latest count, so the first
    # reader after the snapshot lands needs no check (unless the computation outlasted the check
    # interval: then one is sent).
    counted_at = time.time()
    coverage = analysis_coverage(study=study)
    _coverage_remember(study_id=study.pk, coverage=coverage, counted_at=counted_at)
    started = time.perf_counter()
    try:
        from evaluation.plots import all_svgs  # matplotlib: loaded by the worker that draws, never a page

        analysis = study_analysis_compute(study=study)
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
    try:
        # Strict JSON, as the API's renderer writes it; a document it would refuse is not kept.
        document = json.dumps(analysis, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        document = ""
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
        document=document,
        error="",
        error_at=None,
        error_coverage=None,
    )
    return True


def _coverage_key(study_id: int) -> str:
    return f"radlay:analysis-coverage:{study_id}"


def _check_key(study_id: int) -> str:
    return f"radlay:analysis-check:{study_id}"


# How long a counted coverage stays in the cache: its age, not this, says whether to count again.
COVERAGE_KEPT_SECONDS = 24 * 60 * 60


def _coverage_remember(*, study_id: int, coverage: dict, counted_at: float) -> None:
    cache.set(_coverage_key(study_id), {"coverage": coverage, "at": counted_at}, COVERAGE_KEPT_SECONDS)


def analysis_coverage_check(*, study: Study, force: bool = False) -> dict:
    """Count what the analysis of `study` would cover now, keep the count in the shared cache, and
    request a recomputation when it no longer matches the snapshot (not again for data a
    computation failed on) or when `force`. Returns the coverage. The work of the check a reader
    sends (`analysis_coverage_check_send`) and of the beat task; a reader runs it itself only when
    forced or with RADLAY_ANALYSIS_CHECK_SECONDS = 0."""
    counted_at = time.time()
    coverage = analysis_coverage(study=study)
    _coverage_remember(study_id=study.pk, coverage=coverage, counted_at=counted_at)
    snapshot = analysis_snapshot_get(study=study)
    stale = snapshot is None or snapshot.result is None or snapshot.coverage != coverage
    failed_on_these_data = snapshot is not None and snapshot.error_coverage == coverage
    if force or (stale and not failed_on_these_data):
        analysis_snapshot_request(study=study)
    return coverage


def analysis_coverage_check_run(*, study_id: int) -> None:
    """The sent check's work (a task, or a thread in the embedded mode)."""
    try:
        study = Study.objects.filter(pk=study_id).first()
        if study is not None:
            analysis_coverage_check(study=study)
    finally:
        cache.delete(_check_key(study_id))


def analysis_coverage_check_send(*, study: Study) -> None:
    """Send a check of `study`'s data to a worker unless one is on its way (the cache's atomic
    add is the claim; it expires, so a check lost with its worker is sent again later)."""
    from evaluation.tasks import analysis_coverage_check_send as send

    if cache.add(_check_key(study.pk), True, timeout=max(60, settings.RADLAY_ANALYSIS_CHECK_SECONDS)):
        send(study_id=study.pk)


def analysis_snapshot_refresh(*, study: Study, force: bool = False) -> SnapshotState:
    """What a reader of the analysis calls: the state to show, from the snapshot and the last
    count of the study's data. A count older than RADLAY_ANALYSIS_CHECK_SECONDS (or none) sends
    a check to a worker and shows the last one meanwhile; `force` (or a check interval of 0)
    checks here and requests a recomputation whatever the data."""
    check_seconds = settings.RADLAY_ANALYSIS_CHECK_SECONDS
    checking = False
    if force or not check_seconds:
        coverage = analysis_coverage_check(study=study, force=force)
    else:
        counted = cache.get(_coverage_key(study.pk))
        coverage = counted["coverage"] if counted else None
        if counted is None or time.time() - counted["at"] >= check_seconds:
            analysis_coverage_check_send(study=study)
            # Sent to a worker, or run here when the tasks run where they are sent.
            counted = cache.get(_coverage_key(study.pk))
            coverage = counted["coverage"] if counted else coverage
            checking = cache.get(_check_key(study.pk)) is not None
    snapshot = analysis_snapshot_get(study=study)
    stale = (
        snapshot is None
        or snapshot.result is None
        or (coverage is not None and snapshot.coverage != coverage)
    )
    answers_since = coverage["n_answers"] - (snapshot.n_answers if snapshot else 0) if coverage else 0
    return SnapshotState(
        snapshot=snapshot,
        recomputing=snapshot is not None and snapshot.status != Status.IDLE,
        answers_since=max(0, answers_since),
        stale=stale,
        checking=checking,
    )


def analysis_snapshot_wait(
    *, study: Study, after, timeout: float, poll: float = 0.5
) -> AnalysisSnapshot | None:
    """Wait (polling the row) until the snapshot was computed after `after`; None on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        snapshot = (
            AnalysisSnapshot.objects.filter(study=study, computed_at__gt=after)
            .defer("details", "figures", "document")
            .first()
        )
        if snapshot is not None or time.monotonic() >= deadline:
            return snapshot
        time.sleep(poll)


def analysis_snapshots_refresh() -> int:
    """The beat task's work: refresh the snapshot of every open study whose data changed.
    Returns how many recomputations it sent."""
    sent = 0
    for study in Study.objects.filter(status=Study.Status.OPEN):
        snapshot = analysis_snapshot_get(study=study)
        counted_at = time.time()
        coverage = analysis_coverage(study=study)
        _coverage_remember(study_id=study.pk, coverage=coverage, counted_at=counted_at)
        if snapshot is None or coverage not in (snapshot.coverage, snapshot.error_coverage):
            sent += analysis_snapshot_request(study=study)
    return sent
