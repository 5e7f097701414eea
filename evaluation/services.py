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
RADLAY_ANALYSIS.check_seconds (or missing), sends a check to a worker (one at a time per study)
instead of counting in the request; the page says it is checking and polls. A snapshot that lands
leaves the count it was computed from, and a periodic task (`analysis_snapshots_refresh`, on the
beat schedule) checks open studies so that snapshots are fresh before anyone looks. With
RADLAY_ANALYSIS.check_seconds = 0, and for a forced refresh, the check runs in the request. The
survey's save path pays nothing for any of it.

The pages import this module for the snapshot bookkeeping; the analysis and its figures (pandas,
scipy, matplotlib) are imported where they are computed, in `study_analysis_compute` and
`_snapshot_store`, so a web worker never loads them.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Simplification, Source, Study, System
from evaluation.analysis.document import split_details
from evaluation.models import AnalysisSnapshot, SystemMetrics, TextMetrics
from evaluation.selectors import (
    analysis_coverage,
    analysis_snapshot_get,
    system_metrics_stored,
    text_metrics_stored,
)
from work.selectors import WorkerSilence, worker_silence
from work.services import worker_heartbeat_stamp
from work.single_jobs import (
    JobKind,
    abandoned_reason,
    job_claim,
    job_lease,
    job_send,
    job_take_over,
    jobs_heal,
    lease_lapsed,
)

if TYPE_CHECKING:
    from evaluation.analysis.protocol import AnalysisOptions
    from measures.metrics.registry import MetricRecord, MetricValue

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
    # The running recomputation's heartbeat lapsed: its worker is gone and the healing check
    # sends it again.
    lease_lapsed: bool = False
    # No worker has run the healing check for a while (None: one has, or there is no worker to
    # wait for).
    worker_silence: WorkerSilence | None = None


# --- stored per-text metrics -----------------------------------------------------------------------

# Rows per INSERT / DELETE statement (SQLite's default limit is 32 766 parameters).
_TEXT_METRICS_BATCH = 2000


def _storable(values: Mapping[str, MetricValue]) -> dict[str, Any]:
    return {
        name: value if value is None or math.isfinite(value) else ("inf" if value > 0 else "-inf")
        for name, value in values.items()
    }


class TextMetricsStore:
    """The database behind measures.metrics.registry's TextMetricStore for one study's texts and
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
    from evaluation.analysis.study import study_analysis
    from evaluation.analysis.study_frames import analysis_options_from_settings, study_frames
    from measures.stats.pairwise import pairwise_summary
    from surveys.compare_two.selectors import derived_comparisons, pairwise_comparisons

    options = options or analysis_options_from_settings()
    frames = study_frames(study=study)
    _freed_memory_returned()
    analysis = study_analysis(frames, options=options, store=TextMetricsStore(study))
    # The ranking from pairwise answers, and from the lay most/least preferences (derived).
    asked, derived = pairwise_comparisons(study=study), derived_comparisons(study=study)
    analysis["pairwise"] = pairwise_summary(
        asked,
        derived,
        confidence=options.confidence,
        seed=options.seed,
    )
    if analysis["pairwise"] is not None:
        from evaluation.analysis.style_control import style_controlled_rankings

        texts = {
            (source, system): text
            for source, system, text in Simplification.objects.filter(source__study=study).values_list(
                "source__key", "system__key", "shown_text__text"
            )
        }
        # Length and reading grade as covariates, beside the plain rankings.
        analysis["pairwise"]["style_controlled"] = style_controlled_rankings(
            asked,
            derived,
            texts,
            confidence=options.confidence,
        )
    from evaluation.analysis.registered_sections import analysis_sections
    from evaluation.analysis.span_suggestions import span_suggestions_section

    # Sections other apps contribute (judging: each judge run's calibration and position bias).
    analysis.update(analysis_sections(study=study))

    suggestions = span_suggestions_section(study=study, confidence=options.confidence, seed=options.seed)
    if suggestions is not None:
        analysis["span_suggestions"] = suggestions
    from evaluation.analysis.adjudication_section import adjudication_analysis_section

    # The raw and adjudicated views (the adjudicated labels are in the snapshot's coverage).
    adjudication = adjudication_analysis_section(study=study, confidence=options.confidence)
    if adjudication is not None:
        analysis["adjudication"] = adjudication
    return analysis


# --- analysis snapshots ----------------------------------------------------------------------------


def _snapshot_send(study_id: int) -> None:
    from evaluation.tasks import analysis_snapshot_send  # tasks import this module

    analysis_snapshot_send(study_id=study_id)


def _snapshot_abandon(snapshot: AnalysisSnapshot) -> None:
    """A recomputation whose worker was lost RADLAY_JOB_ATTEMPTS times (the analysis kills it:
    out of memory, say) is given up with the reason; the same data are not tried again by the
    periodic refresh, and a change of the data or a request asks again."""
    AnalysisSnapshot.objects.filter(pk=snapshot.pk).update(
        status=Status.IDLE,
        runner="",
        heartbeat_at=None,
        dirty=False,
        error=abandoned_reason(SNAPSHOTS, snapshot),
        error_at=timezone.now(),
        error_coverage=analysis_coverage(study=snapshot.study),
    )


# A study's recomputation on the job layer: its lease, healing and attempts (work.single_jobs).
SNAPSHOTS = JobKind(
    name="analysis",
    model=AnalysisSnapshot,
    send=_snapshot_send,
    queued=Status.QUEUED,
    running=Status.RUNNING,
    abandon=_snapshot_abandon,
    key="study_id",
    task_field="runner",
    requeued=lambda: {"healed": F("healed") + 1},
)


def analysis_snapshot_request(*, study: Study) -> bool:
    """Ask for a recomputation of `study`'s snapshot. Sends the task when this call moved the
    snapshot to queued (or took over a lost one); otherwise marks the queued/running one dirty.
    Returns whether it sent.

    Call outside a transaction: the claim is one autocommitted UPDATE, so the task, which may
    start at once in another process, sees it.
    """
    AnalysisSnapshot.objects.get_or_create(study=study)
    now = timezone.now()
    claimed = AnalysisSnapshot.objects.filter(status=Status.IDLE, study=study).update(
        status=Status.QUEUED,
        requested_at=now,
        started_at=None,
        dirty=False,
        sent_at=now,
        send_error="",
        runner="",
        heartbeat_at=None,
        attempts=0,
    )
    if claimed:
        job_send(SNAPSHOTS, study.pk)
        return True
    if job_take_over(SNAPSHOTS, study.pk):
        return True
    AnalysisSnapshot.objects.filter(study=study).exclude(status=Status.IDLE).update(dirty=True)
    return False


def analysis_snapshot_compute(*, study_id: int, task_id: str = "") -> bool:
    """The task's work: claim the queued snapshot (queued → running, or a running one whose lease
    lapsed), compute the analysis of the study's data and its figures while keeping the lease,
    store them with what they covered, and send one more recomputation if the data changed
    meanwhile. Returns False when there was nothing to claim (another worker has it, or a
    redelivered message of a finished task). `task_id`: the Celery task's, so that its retry
    after a lost database connection takes over its own claim."""
    runner = task_id or uuid.uuid4().hex
    if not job_claim(SNAPSHOTS, study_id, task_id=runner):
        return False
    study = Study.objects.get(pk=study_id)
    with job_lease(SNAPSHOTS, study_id, task_id=runner):
        stored = _snapshot_store(study=study)
    # Only the holder of the lease ends it: a computation taken over meanwhile is the newer one's.
    ended = AnalysisSnapshot.objects.filter(study_id=study_id, runner=runner).update(
        status=Status.IDLE, runner="", heartbeat_at=None
    )
    if ended and AnalysisSnapshot.objects.filter(study_id=study_id, dirty=True).exists():
        analysis_snapshot_request(study=study)
    return stored


def analysis_snapshots_heal(*, worker: str = "") -> int:
    """The periodic healing check (beat, and every worker's start): stamp that a worker is alive,
    and queue again and send every recomputation whose worker or message was lost. Returns how
    many it acted on."""
    worker_heartbeat_stamp(worker=worker)
    return jobs_heal(SNAPSHOTS)


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
        from evaluation.analysis.figures import (
            all_svgs,  # matplotlib: loaded by the worker that draws, never a page
        )

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


def _cached(what: str, call: Callable[[], Any], default: Any = None) -> Any:
    """`call()` on the shared cache, or `default` with a log line when the cache is unreachable
    (Redis stopped or restarting): the count it keeps only saves work, so a page then shows the
    stored snapshot as it is instead of answering 500."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - redis-py raises several kinds; every one means "no cache"
        logger.warning("the cache is unreachable (%s): %s: %s", what, type(exc).__name__, exc)
        return default


def _coverage_remember(*, study_id: int, coverage: dict, counted_at: float) -> None:
    _cached(
        "keeping the count of a study's answers",
        lambda: cache.set(
            _coverage_key(study_id), {"coverage": coverage, "at": counted_at}, COVERAGE_KEPT_SECONDS
        ),
    )


def analysis_coverage_check(*, study: Study, force: bool = False) -> dict:
    """Count what the analysis of `study` would cover now, keep the count in the shared cache, and
    request a recomputation when it no longer matches the snapshot (not again for data a
    computation failed on) or when `force`. Returns the coverage. The work of the check a reader
    sends (`analysis_coverage_check_send`) and of the beat task; a reader runs it itself only when
    forced or with RADLAY_ANALYSIS.check_seconds = 0."""
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
        _cached("ending a check of a study's answers", lambda: cache.delete(_check_key(study_id)))


def analysis_coverage_check_send(*, study: Study) -> None:
    """Send a check of `study`'s data to a worker unless one is on its way (the cache's atomic
    add is the claim; it expires, so a check lost with its worker is sent again later)."""
    from evaluation.tasks import analysis_coverage_check_send as send

    timeout = max(60, settings.RADLAY_ANALYSIS.check_seconds)
    # Without the cache there is no claim: no check is sent (beat's refresh checks open studies).
    if _cached(
        "claiming a check of a study's answers",
        lambda: cache.add(_check_key(study.pk), True, timeout=timeout),
    ):
        send(study_id=study.pk)


def analysis_snapshot_refresh(*, study: Study, force: bool = False) -> SnapshotState:
    """What a reader of the analysis calls: the state to show, from the snapshot and the last
    count of the study's data. A count older than RADLAY_ANALYSIS.check_seconds (or none) sends
    a check to a worker and shows the last one meanwhile; `force` (or a check interval of 0)
    checks here and requests a recomputation whatever the data."""
    check_seconds = settings.RADLAY_ANALYSIS.check_seconds
    checking = False
    if force or not check_seconds:
        coverage = analysis_coverage_check(study=study, force=force)
    else:
        counted = _cached(
            "reading the count of a study's answers", lambda: cache.get(_coverage_key(study.pk))
        )
        coverage = counted["coverage"] if counted else None
        if counted is None or time.time() - counted["at"] >= check_seconds:
            analysis_coverage_check_send(study=study)
            # Sent to a worker, or run here when the tasks run where they are sent.
            counted = _cached(
                "reading the count of a study's answers", lambda: cache.get(_coverage_key(study.pk))
            )
            coverage = counted["coverage"] if counted else coverage
            checking = (
                _cached("reading whether a check is on its way", lambda: cache.get(_check_key(study.pk)))
                is not None
            )
    snapshot = analysis_snapshot_get(study=study)
    stale = (
        snapshot is None
        or snapshot.result is None
        or (coverage is not None and snapshot.coverage != coverage)
    )
    answers_since = coverage["n_answers"] - (snapshot.n_answers if snapshot else 0) if coverage else 0
    recomputing = snapshot is not None and snapshot.status != Status.IDLE
    return SnapshotState(
        snapshot=snapshot,
        recomputing=recomputing,
        answers_since=max(0, answers_since),
        stale=stale,
        checking=checking,
        lease_lapsed=snapshot is not None and lease_lapsed(SNAPSHOTS, snapshot),
        worker_silence=worker_silence(),
    )


# The PostgreSQL advisory lock that lets one request at a time wait for a fresh snapshot.
FRESH_WAIT_LOCK = 0x7261646C  # "radl"
_fresh_wait_here = threading.Lock()


@contextlib.contextmanager
def _fresh_wait_slot() -> Iterator[bool]:
    """Yields whether this request may wait: the one slot of the whole server (a PostgreSQL
    advisory lock; a lock of this process on another database, where there is one process). A
    waiting request holds a web worker, so more than one waiting at a time could hold all of
    them and stall the participants' pages."""
    if connection.vendor != "postgresql":
        got = _fresh_wait_here.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                _fresh_wait_here.release()
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [FRESH_WAIT_LOCK])
        got = cursor.fetchone()[0]
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [FRESH_WAIT_LOCK])


def analysis_snapshot_wait(
    *, study: Study, after, timeout: float, poll: float = 0.25
) -> AnalysisSnapshot | None:
    """Wait (polling the row) until the snapshot was computed after `after`, at most `timeout`
    seconds, and only while no other request waits (see _fresh_wait_slot); None when it was not
    computed by then."""

    def landed() -> AnalysisSnapshot | None:
        return (
            AnalysisSnapshot.objects.filter(study=study, computed_at__gt=after)
            .defer("details", "figures", "document")
            .first()
        )

    with _fresh_wait_slot() as may_wait:
        deadline = time.monotonic() + (timeout if may_wait else 0)
        while True:
            snapshot = landed()
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
