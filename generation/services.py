"""Writes of the generation app: launch a batch, run one job, cancel and resume a batch.

Concurrency without chords. A batch may have at most `batch.concurrency` jobs *in flight* (queued
with `dispatched_at`, or running). `generation_batch_dispatch` fills the free slots with the next
pending jobs, under a lock on the batch row, and sends them after the transaction commits; every job
that finishes (succeeded or failed) calls it again in the transaction that records its result. So
the batch trickles through the queue N jobs at a time, whatever the number of workers, and a job's
slot is freed only when its result is in the database.

Idempotence and crashes.
* A job is *claimed* by one conditional UPDATE (pending → running, attempts + 1): two deliveries of
  one message, or two messages for one job, cannot both run it. A succeeded job is never run again.
* A running job is taken over when it is stale (started longer ago than the task hard time limit, so
  its worker is certainly gone), or when the same Celery task id comes back: with acks_late the
  broker redelivers a message only when its worker died before acknowledging it.
* Backend calls are cached in the database as they return (generation.backends.db_cache), outside
  the job transaction: a job resumed after a crash replays the calls it had made for free, and a
  rerun batch makes no call at all.
* The outputs are written in one transaction with `simplification_upsert`, which updates the one
  (source, system) row: running a job twice never duplicates a simplification.

Local models (GPU_BACKENDS: transformers) run in chunks. The dispatcher sends a GPU batch's jobs
as chunks of up to RADLAY_GPU_BATCH_SIZE jobs of one family, one task per chunk; the task claims each
job of its chunk (the same conditional claim), runs the pipeline for the claimed ones in lockstep so
that every model call is one batch on the device (run_self_correction_batch / generate_baselines),
and records each job in its own transaction as a single job would be. For such a batch a concurrency
slot holds a chunk: up to `concurrency × RADLAY_GPU_BATCH_SIZE` jobs are in flight, so that the
default concurrency does not cap the device batch. A chunk is one Celery task: if its worker dies,
its jobs stay running and are taken over as above (the redelivered chunk by its task id, or any
dispatch once they are stale), resuming from the call cache.

Failures. A non-transient BackendError (or any other exception in the pipeline) fails the job with
its message; a transient one (the backend already retried it with backoff) sends the job again after
a backoff with jitter, until RADLAY_GENERATION_JOB_ATTEMPTS attempts; then it fails. The rest of the
batch goes on either way. In a chunk, a transient failure (a full GPU) sends each job again on its own,
a smaller batch; any other failure reruns the chunk's jobs one at a time from the call cache, so that
only the job at fault fails.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from annotation.models import Simplification, Source, Study, System
from annotation.services import simplification_upsert, system_upsert
from generation.backends.base import BackendError, ChatBackend, GenerationParams
from generation.backends.cache import CachedBackend
from generation.backends.db_cache import DbCallCache
from generation.backends.registry import GPU_BACKENDS, get_backend
from generation.models import (
    GENERATED_SYSTEMS,
    SYSTEM_FAMILY,
    SYSTEM_LABELS,
    GenerationBatch,
    GenerationJob,
)
from generation.pipeline.self_correction import (
    DEFAULT_MAX_ROUNDS,
    BaselineResult,
    SelfCorrectionResult,
    generate_baselines,
    run_self_correction,
    run_self_correction_batch,
)
from generation.prompts.registry import DEFAULT_VERSION, available_versions, load_prompts

if TYPE_CHECKING:
    from generation.pipeline.scgr import SCGRResult

logger = logging.getLogger(__name__)

FAMILY_ORDER = ("plain", "cot", "scgr")
DEFAULT_GLOSSARY_MODEL = "radlay-glossary-v1"
DEFAULT_SCGR_ATTEMPTS = 3
_Status = GenerationJob.Status


# --- configuration read at call time (tests override it with the settings fixture) ------------


def stale_after() -> timedelta:
    """How long a running job may go without finishing before it counts as abandoned. Celery kills a
    task at CELERY_TASK_TIME_LIMIT, so past that (plus a margin) no worker is still on it."""
    seconds = getattr(settings, "RADLAY_GENERATION_STALE_AFTER", None)
    if seconds is None:
        seconds = settings.CELERY_TASK_TIME_LIMIT + 60
    return timedelta(seconds=float(seconds))


def _job_max_attempts() -> int:
    return max(1, int(getattr(settings, "RADLAY_GENERATION_JOB_ATTEMPTS", 3)))


def gpu_batch_size() -> int:
    """How many jobs of a local-model batch one gpu task runs in lockstep (the device batch too)."""
    return max(1, int(getattr(settings, "RADLAY_GPU_BATCH_SIZE", 16)))


def _retry_countdown(attempts: int) -> float:
    """Backoff before attempt `attempts + 1`: exponential with full jitter, capped at 5 minutes."""
    base = float(getattr(settings, "RADLAY_GENERATION_RETRY_DELAY", 10.0))
    return random.uniform(0.0, min(300.0, base * 2 ** (attempts - 1)))


# --- launching ---------------------------------------------------------------------------------


def generation_batch_create(
    *,
    study: Study,
    systems: Sequence[str],
    backend: str,
    model_name: str = "",
    model_artifact: Any = None,
    temperature: float = 0.8,
    max_tokens: int | None = 512,
    seed: int | None = None,
    top_p: float | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    sample_index: int = 0,
    scgr_max_attempts: int = DEFAULT_SCGR_ATTEMPTS,
    prompt_version: str = DEFAULT_VERSION,
    concurrency: int | None = None,
    sources: Iterable[Source] | None = None,
    created_by: Any = None,
) -> GenerationBatch:
    """Create a batch with one job per (source, family) and send its first jobs once committed.

    `model_artifact` (an ml.ModelArtifact) is the transformers model instead of `model_name`.
    `sources` defaults to every source of the study. Raises ValidationError on a bad request.
    """
    systems = list(dict.fromkeys(systems))
    errors: dict[str, str] = {}
    unknown = [key for key in systems if key not in GENERATED_SYSTEMS]
    if not systems or unknown:
        errors["systems"] = f"Choose systems among {', '.join(GENERATED_SYSTEMS)}" + (
            f" (unknown: {', '.join(unknown)})." if unknown else "."
        )
    if backend not in GenerationBatch.Backend.values:
        errors["backend"] = (
            f"Unknown backend {backend!r}; use one of {', '.join(GenerationBatch.Backend.values)}."
        )
    model_name = (model_name or "").strip()
    if model_artifact is not None and backend != GenerationBatch.Backend.TRANSFORMERS:
        errors["model_artifact"] = "A model artifact can only be used with the transformers backend."
    if model_artifact is not None and model_name:
        errors["model_name"] = "Give either a model name/path or a model artifact, not both."
    if backend == GenerationBatch.Backend.OPENAI and not model_name:
        errors["model_name"] = "The openai backend needs a model name (e.g. gpt-3.5-turbo)."
    if backend == GenerationBatch.Backend.TRANSFORMERS and not model_name and model_artifact is None:
        errors["model_name"] = "The transformers backend needs a local model directory or a model artifact."
    if backend == GenerationBatch.Backend.GLOSSARY and not model_name:
        model_name = DEFAULT_GLOSSARY_MODEL
    if temperature < 0:
        errors["temperature"] = "The temperature cannot be negative."
    if max_tokens is not None and max_tokens < 1:
        errors["max_tokens"] = "max tokens must be at least 1."
    if max_rounds < 0:
        errors["max_rounds"] = "max rounds cannot be negative."
    if scgr_max_attempts < 1:
        errors["scgr_max_attempts"] = "SCGR needs at least one attempt."
    if prompt_version not in available_versions():
        errors["prompt_version"] = (
            f"Unknown prompt version {prompt_version!r} ({', '.join(available_versions())})."
        )
    concurrency = settings.RADLAY_GENERATION_CONCURRENCY if concurrency is None else concurrency
    if concurrency < 1:
        errors["concurrency"] = "Concurrency must be at least 1."
    source_list = list(sources) if sources is not None else list(Source.objects.filter(study=study))
    if any(source.study_id != study.pk for source in source_list):
        errors["sources"] = "Every source must belong to the study."
    elif not source_list:
        errors["study"] = f"Study {study.slug!r} has no sources to simplify."
    if errors:
        raise ValidationError(errors)

    parameters = {
        "temperature": float(temperature),
        "max_tokens": max_tokens,
        "seed": seed,
        "top_p": top_p,
        "sample_index": int(sample_index),
        "max_rounds": int(max_rounds),
        "scgr_max_attempts": int(scgr_max_attempts),
    }
    families = [family for family in FAMILY_ORDER if any(SYSTEM_FAMILY[key] == family for key in systems)]
    with transaction.atomic():
        for key in systems:
            if not System.objects.filter(study=study, key=key).exists():
                system_upsert(study=study, key=key, label=SYSTEM_LABELS[key])
        batch = GenerationBatch.objects.create(
            study=study,
            systems=systems,
            backend=backend,
            model_name=model_name,
            model_artifact=model_artifact,
            prompt_version=prompt_version,
            parameters=parameters,
            concurrency=concurrency,
            created_by=created_by,
        )
        GenerationJob.objects.bulk_create(
            [
                GenerationJob(
                    batch=batch,
                    source=source,
                    family=family,
                    systems=[key for key in systems if SYSTEM_FAMILY[key] == family],
                )
                for source in sorted(source_list, key=lambda s: s.position)
                for family in families
            ]
        )
        generation_batch_dispatch(batch=batch)
    return batch


def generation_batch_dispatch(*, batch: GenerationBatch) -> list[int]:
    """Send the batch's next pending jobs into its free concurrency slots (after commit); mark the
    batch finished when nothing is left to run. Returns the ids sent."""
    with transaction.atomic():
        locked = GenerationBatch.objects.select_for_update().get(pk=batch.pk)
        job_ids = _dispatch_locked(locked)
    batch.finished_at = locked.finished_at
    return job_ids


def _dispatch_locked(batch: GenerationBatch) -> list[int]:
    """Call inside a transaction holding the batch row lock."""
    now = timezone.now()
    cutoff = now - stale_after()
    jobs = GenerationJob.objects.filter(batch=batch)
    live_running = Q(status=_Status.RUNNING, started_at__gte=cutoff)
    queued = Q(status=_Status.PENDING, dispatched_at__gte=cutoff)
    # One query for the window and for whether anything is left (this runs after every job).
    counts = jobs.aggregate(
        in_flight=Count("pk", filter=live_running | queued),
        pending=Count("pk", filter=Q(status=_Status.PENDING)),
        running=Count("pk", filter=Q(status=_Status.RUNNING)),
    )
    job_ids: list[int] = []
    gpu = batch.backend in GPU_BACKENDS
    chunk_size = gpu_batch_size() if gpu else 1
    if batch.cancelled_at is None:
        free = batch.concurrency * chunk_size - counts["in_flight"]
        if free > 0 and counts["pending"] + counts["running"] > 0:
            # Never-sent jobs first (in source order; family first on a GPU, so that chunks fill up),
            # then jobs whose worker or message was lost.
            order = ("family", "source__position", "pk") if gpu else ("source__position", "family", "pk")
            fresh = list(
                jobs.filter(status=_Status.PENDING, dispatched_at__isnull=True)
                .order_by(*order)
                .values_list("pk", flat=True)[:free]
            )
            lost: list[int] = []
            if len(fresh) < free:
                lost = list(
                    jobs.filter(
                        Q(status=_Status.RUNNING, started_at__lt=cutoff)
                        | Q(status=_Status.PENDING, dispatched_at__lt=cutoff)
                    )
                    .order_by("pk")
                    .values_list("pk", flat=True)[: free - len(fresh)]
                )
            job_ids = fresh + lost
            if job_ids:
                # A lost running job goes back to pending so that the claim's plain path takes it.
                GenerationJob.objects.filter(pk__in=job_ids).update(
                    status=_Status.PENDING, dispatched_at=now, not_before=None
                )
                backend = batch.backend
                if gpu:
                    chunks = _gpu_chunks(job_ids, chunk_size)
                    transaction.on_commit(lambda: [_send(chunk, backend=backend) for chunk in chunks])
                else:
                    transaction.on_commit(lambda: _send(job_ids, backend=backend))
    # Sending jobs moves them between pending and running only, so the counts still tell.
    unfinished = counts["running"] + (counts["pending"] if batch.cancelled_at is None else 0)
    if not unfinished and batch.finished_at is None:
        batch.finished_at = now
        batch.save(update_fields=["finished_at"])
    return job_ids


def _gpu_chunks(job_ids: list[int], size: int) -> list[list[int]]:
    """The jobs split into chunks of one family, at most `size` each, in the order given. SCGR jobs
    go alone: their pipeline has no lockstep form."""
    families = dict(GenerationJob.objects.filter(pk__in=job_ids).values_list("pk", "family"))
    by_family: dict[str, list[int]] = {}
    for job_id in job_ids:
        by_family.setdefault(families[job_id], []).append(job_id)
    chunks: list[list[int]] = []
    for family, ids in by_family.items():
        step = 1 if family == GenerationJob.Family.SCGR else size
        chunks.extend(ids[start : start + step] for start in range(0, len(ids), step))
    return chunks


def _send(job_ids: list[int], *, backend: str, countdown: float | None = None) -> None:
    """Queue the jobs (for a GPU backend: one chunk, see generation.tasks.generation_jobs_send)."""
    from generation import tasks  # tasks import this module

    tasks.generation_jobs_send(job_ids, backend=backend, countdown=countdown)


def generation_batch_cancel(*, batch: GenerationBatch) -> int:
    """Cancel the batch's pending jobs (running ones finish and are recorded). Returns how many."""
    with transaction.atomic():
        locked = GenerationBatch.objects.select_for_update().get(pk=batch.pk)
        now = timezone.now()
        if locked.cancelled_at is None:
            locked.cancelled_at = now
            locked.save(update_fields=["cancelled_at"])
        count = GenerationJob.objects.filter(batch=locked, status=_Status.PENDING).update(
            status=_Status.CANCELLED, finished_at=now, dispatched_at=None
        )
        _dispatch_locked(locked)
    batch.cancelled_at, batch.finished_at = locked.cancelled_at, locked.finished_at
    return count


def generation_batch_resume(
    *, batch: GenerationBatch, retry_failed: bool = False, force: bool = False
) -> list[int]:
    """Start a stopped batch again: cancelled jobs become pending, failed ones too when
    `retry_failed`; with `force` (the workers are known to have died, e.g. after a restart) running
    and queued jobs are sent again at once instead of after the stale timeout. Jobs that succeeded
    are never run again. Returns the ids sent now."""
    with transaction.atomic():
        locked = GenerationBatch.objects.select_for_update().get(pk=batch.pk)
        jobs = GenerationJob.objects.filter(batch=locked)
        jobs.filter(status=_Status.CANCELLED).update(
            status=_Status.PENDING, finished_at=None, dispatched_at=None
        )
        if retry_failed:
            jobs.filter(status=_Status.FAILED).update(
                status=_Status.PENDING, finished_at=None, dispatched_at=None, attempts=0
            )
        if force:
            jobs.filter(status__in=[_Status.PENDING, _Status.RUNNING]).update(
                status=_Status.PENDING, dispatched_at=None, not_before=None
            )
        locked.cancelled_at = None
        locked.finished_at = None
        locked.save(update_fields=["cancelled_at", "finished_at"])
        job_ids = _dispatch_locked(locked)
    batch.cancelled_at, batch.finished_at = locked.cancelled_at, locked.finished_at
    return job_ids


# --- running one job -----------------------------------------------------------------------------


@dataclass
class _Output:
    system: str
    text: str
    provenance: dict[str, Any]


@dataclass
class _Outcome:
    outputs: list[_Output]
    transcript: list[dict[str, Any]]
    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    extra: dict[str, Any] = field(default_factory=dict)


def generation_job_run(*, job_id: int, task_id: str = "") -> GenerationJob:
    """Run one job if it may run (see the module docstring), record its outputs or its error, and
    send the batch's next jobs. Safe to call any number of times for the same job."""
    job = _job_claim(job_id=job_id, task_id=task_id)
    if job is None:
        logger.info(
            "generation job %s: not claimable (done, cancelled or running elsewhere); skipped", job_id
        )
        return GenerationJob.objects.get(pk=job_id)
    return _job_execute(job)


def generation_jobs_run(*, job_ids: Sequence[int], task_id: str = "") -> list[GenerationJob]:
    """Run a chunk of jobs of one local-model batch and family in lockstep (see the module
    docstring): claim each, run the claimed ones together, record each in its own transaction, and
    send the batch's next jobs with the last record. Jobs that are not claimable are skipped. Safe
    to call any number of times for the same jobs; returns them in the order given."""
    claimed: list[GenerationJob] = []
    for job_id in job_ids:
        job = _job_claim(job_id=job_id, task_id=task_id)
        if job is None:
            logger.info(
                "generation job %s: not claimable (done, cancelled or running elsewhere); skipped", job_id
            )
        else:
            claimed.append(job)
    # One group in practice (the dispatcher makes chunks of one batch and family); grouping only
    # keeps a mixed list correct.
    groups: dict[tuple[int, str], list[GenerationJob]] = {}
    for job in claimed:
        groups.setdefault((job.batch_id, job.family), []).append(job)
    for group in groups.values():
        _jobs_execute(group)
    jobs = GenerationJob.objects.in_bulk(list(job_ids))
    return [jobs[job_id] for job_id in job_ids if job_id in jobs]


def _job_execute(job: GenerationJob, *, dispatch: bool = True) -> GenerationJob:
    """Run one claimed job alone and record its outputs or its error."""
    try:
        outcome = _job_generate(job)
    except BackendError as exc:
        return _job_fail(job, error=str(exc), transient=exc.transient, dispatch=dispatch)
    except Exception as exc:  # noqa: BLE001 - one bad source must not stall the batch; the error is recorded
        logger.exception("generation job %s failed", job.pk)
        return _job_fail(job, error=f"{type(exc).__name__}: {exc}", transient=False, dispatch=dispatch)
    return _job_succeed(job, outcome, dispatch=dispatch)


def _jobs_execute(jobs: list[GenerationJob]) -> None:
    """Run claimed jobs of one batch and family together and record each. Only the last record
    sends the batch's next jobs: dispatching after each record would refill the freed slots one job
    at a time, in chunks of one. (If that last run was superseded, the run that took it over
    dispatches when it finishes.)"""
    last = len(jobs) - 1
    if len(jobs) == 1 or jobs[0].family == GenerationJob.Family.SCGR:
        for index, job in enumerate(jobs):
            _job_execute(job, dispatch=index == last)
        return
    try:
        outcomes = _jobs_generate(jobs)
    except Exception as exc:  # noqa: BLE001 - recorded per job below
        if isinstance(exc, BackendError) and exc.transient:
            # Typically a full GPU: each job is sent again on its own, a smaller batch.
            for index, job in enumerate(jobs):
                _job_fail(job, error=str(exc), transient=True, dispatch=index == last)
            return
        # The chunk shares its failure; run its jobs one at a time (the calls made so far come from
        # the cache) so that only the job at fault fails.
        logger.warning(
            "generation chunk %s failed (%s: %s); running its jobs one at a time",
            [job.pk for job in jobs],
            type(exc).__name__,
            exc,
        )
        for index, job in enumerate(jobs):
            _job_execute(job, dispatch=index == last)
        return
    for index, (job, outcome) in enumerate(zip(jobs, outcomes, strict=True)):
        _job_succeed(job, outcome, dispatch=index == last)


def _job_claim(*, job_id: int, task_id: str) -> GenerationJob | None:
    now = timezone.now()
    claimable = Q(status=_Status.PENDING) | Q(status=_Status.RUNNING, started_at__lt=now - stale_after())
    if task_id:
        claimable |= Q(status=_Status.RUNNING, task_id=task_id)
    # No join in this UPDATE: Django would move every condition into a `pk IN (subquery)`, which
    # PostgreSQL does not re-check against a row another transaction just claimed.
    cancelled = GenerationBatch.objects.filter(pk=OuterRef("batch_id"), cancelled_at__isnull=False)
    claimed = GenerationJob.objects.filter(claimable, ~Exists(cancelled), pk=job_id).update(
        status=_Status.RUNNING,
        attempts=F("attempts") + 1,
        started_at=now,
        finished_at=None,
        not_before=None,
        task_id=task_id,
    )
    if not claimed:
        return None
    return GenerationJob.objects.select_related("batch", "batch__model_artifact", "source").get(pk=job_id)


def _job_succeed(job: GenerationJob, outcome: _Outcome, *, dispatch: bool = True) -> GenerationJob:
    with transaction.atomic():
        batch = GenerationBatch.objects.select_for_update().get(pk=job.batch_id)
        systems = {s.key: s for s in System.objects.filter(study_id=batch.study_id, key__in=job.systems)}
        produced: list[Simplification] = []
        for output in outcome.outputs:
            system = systems.get(output.system) or system_upsert(
                study=batch.study, key=output.system, label=SYSTEM_LABELS[output.system]
            )
            produced.append(
                simplification_upsert(
                    source=job.source, system=system, text=output.text, provenance=output.provenance
                )
            )
        job.simplifications.add(*produced)
        job.status = _Status.SUCCEEDED
        job.error = ""
        job.finished_at = timezone.now()
        job.dispatched_at = None
        job.calls, job.cached_calls = outcome.calls, outcome.cached_calls
        job.prompt_tokens, job.completion_tokens = outcome.prompt_tokens, outcome.completion_tokens
        job.cost_usd = outcome.cost_usd
        job.transcript = outcome.transcript
        # Not attempts/task_id/started_at: those belong to the claim.
        job.save(
            update_fields=[
                "status",
                "error",
                "finished_at",
                "dispatched_at",
                "calls",
                "cached_calls",
                "prompt_tokens",
                "completion_tokens",
                "cost_usd",
                "transcript",
            ]
        )
        if dispatch:
            _dispatch_locked(batch)
    return job


def _job_fail(job: GenerationJob, *, error: str, transient: bool, dispatch: bool = True) -> GenerationJob:
    with transaction.atomic():
        batch = GenerationBatch.objects.select_for_update().get(pk=job.batch_id)
        owner = GenerationJob.objects.filter(pk=job.pk).values_list("status", "task_id", "attempts").first()
        if owner != (_Status.RUNNING, job.task_id, job.attempts):
            # Another delivery took the job over meanwhile (a forced resume): its outcome stands.
            logger.info("generation job %s: failure of a superseded run ignored: %s", job.pk, error)
            return job
        job.error = error
        if transient and job.attempts < _job_max_attempts() and batch.cancelled_at is None:
            countdown = _retry_countdown(job.attempts)
            now = timezone.now()
            # The job keeps its concurrency slot while it waits for its retry.
            job.status, job.dispatched_at = _Status.PENDING, now
            job.not_before = now + timedelta(seconds=countdown)
            job.save(update_fields=["status", "error", "dispatched_at", "not_before"])
            job_ids, backend = [job.pk], batch.backend
            transaction.on_commit(lambda: _send(job_ids, backend=backend, countdown=countdown))
            logger.warning(
                "generation job %s: transient failure (attempt %s), retry in %.1fs: %s",
                job.pk,
                job.attempts,
                countdown,
                error,
            )
        else:
            job.status, job.finished_at, job.dispatched_at = _Status.FAILED, timezone.now(), None
            job.save(update_fields=["status", "error", "finished_at", "dispatched_at"])
            logger.warning("generation job %s failed after %s attempt(s): %s", job.pk, job.attempts, error)
        if dispatch:
            _dispatch_locked(batch)
    return job


# --- the pipeline call ---------------------------------------------------------------------------


def batch_generation_params(batch: GenerationBatch) -> GenerationParams:
    p = batch.parameters
    return GenerationParams(
        temperature=float(p.get("temperature", 0.8)),
        max_tokens=p.get("max_tokens", 512),
        seed=p.get("seed"),
        top_p=p.get("top_p"),
        sample_index=int(p.get("sample_index", 0)),
    )


def batch_model_path(batch: GenerationBatch) -> str:
    """The model the backend is built with: the artifact's directory, else `model_name`."""
    if batch.model_artifact_id:
        return str(batch.model_artifact.path)
    return batch.model_name


@lru_cache(maxsize=16)
def _backend_instance(name: str, model: str, options: tuple[tuple[str, Any], ...]) -> ChatBackend:
    # One instance per configuration and process: an OpenAI client keeps its connection pool and a
    # transformers backend its loaded model across jobs (both are safe to share between threads).
    return get_backend(name, model=model, **dict(options))


def batch_backend(batch: GenerationBatch) -> ChatBackend:
    """The batch's backend, its calls cached in the database."""
    from generation.backends.openai_backend import RetryPolicy

    options: dict[str, Any] = {}
    if batch.backend == GenerationBatch.Backend.OPENAI:
        options = {
            "base_url": settings.OPENAI_BASE_URL or None,
            "api_key": settings.OPENAI_API_KEY or None,
            "timeout": float(settings.RADLAY_LLM_TIMEOUT),
            "retry": RetryPolicy(
                max_attempts=int(settings.RADLAY_LLM_MAX_RETRIES) + 1,
                initial_delay=float(getattr(settings, "RADLAY_LLM_RETRY_DELAY", 1.0)),
            ),
        }
    elif batch.backend == GenerationBatch.Backend.TRANSFORMERS:
        device = getattr(settings, "RADLAY_TRANSFORMERS_DEVICE", None)
        if device:
            options["device"] = device
        # A chunk's step is one batch on the device (its Processor step, two per job, takes two).
        options["batch_size"] = gpu_batch_size()
    model = batch_model_path(batch)
    backend = _backend_instance(batch.backend, model, tuple(sorted(options.items())))
    return CachedBackend(backend, DbCallCache(backend=batch.backend, model=model))


# Flag reasons of the self-correction loop that concern the Generator's first answer (the BS text).
_BS_FLAG = re.compile(r"^CoT answer not parsed|\bround 0\b")


def _job_generate(job: GenerationJob) -> _Outcome:
    return _jobs_generate([job])[0]


def _jobs_generate(jobs: Sequence[GenerationJob]) -> list[_Outcome]:
    """The outcomes of claimed jobs of one batch and family, in their order. One job runs the
    pipeline alone; several run it in lockstep, each model call one batch over them (the same calls,
    so the same cache entries, as when each runs alone)."""
    batch = jobs[0].batch
    family = jobs[0].family
    backend = batch_backend(batch)
    params = batch_generation_params(batch)
    base = {
        "origin": "generation",
        "backend": batch.backend,
        "seed": params.seed,
    }

    def common_parameters(job: GenerationJob) -> dict[str, Any]:
        return {
            **params.as_dict(),
            "generation_batch": batch.pk,
            "generation_job": job.pk,
            "model_artifact": batch.model_artifact_id,
        }

    if family == GenerationJob.Family.SCGR:
        return [_run_scgr(job, backend, params, base, common_parameters(job)) for job in jobs]

    prompts = load_prompts(batch.prompt_version)
    kind = family
    sentences = [job.source.text for job in jobs]
    sc_key = f"{kind}_sc"
    # Every job of a batch and family asks for the same systems.
    if sc_key in jobs[0].systems:
        max_rounds = int(batch.parameters.get("max_rounds", DEFAULT_MAX_ROUNDS))
        options = {"backend": backend, "prompt_kind": kind, "prompts": prompts, "params": params}
        if len(jobs) == 1:
            results = [run_self_correction(sentences[0], max_rounds=max_rounds, **options)]
        else:
            results = run_self_correction_batch(sentences, max_rounds=max_rounds, **options)
        return [
            _self_correction_outcome(job, result, base, common_parameters(job), max_rounds)
            for job, result in zip(jobs, results, strict=True)
        ]
    # Only the BS system of this family was asked for: the loop is skipped.
    baselines = generate_baselines(
        sentences, backend=backend, prompt_kind=kind, prompts=prompts, params=params
    )
    return [
        _baseline_outcome(job, result, base, common_parameters(job))
        for job, result in zip(jobs, baselines, strict=True)
    ]


def _self_correction_outcome(
    job: GenerationJob,
    result: SelfCorrectionResult,
    base: dict[str, Any],
    common_parameters: dict[str, Any],
    max_rounds: int,
) -> _Outcome:
    kind = job.family
    bs_key, sc_key = f"{kind}_bs", f"{kind}_sc"
    prompt_parameters = {**common_parameters, "prompt_kind": kind, "prompt_digest": result.prompt_digest}
    outputs: list[_Output] = []
    model = result.model
    if bs_key in job.systems:
        bs_reasons = [r for r in result.flag_reasons if _BS_FLAG.search(r)]
        outputs.append(
            _Output(
                bs_key,
                result.bs_text,
                {
                    **base,
                    "model_name": model,
                    "prompt_version": result.prompt_version,
                    "parameters": {**prompt_parameters, "max_rounds": max_rounds},
                    "rounds": 0,
                    "reached_round_cap": False,
                    "transcript": [turn for turn in result.transcript if turn.get("round") == 0],
                    "raw_output": result.bs_raw,
                    "flagged": bool(bs_reasons),
                    "flag_reason": "; ".join(bs_reasons),
                },
            )
        )
    outputs.append(
        _Output(
            sc_key,
            result.sc_text,
            {
                **base,
                "model_name": model,
                "prompt_version": result.prompt_version,
                "parameters": {
                    **prompt_parameters,
                    "max_rounds": max_rounds,
                    "stopped_by": result.stopped_by,
                    "refinements": result.refinements,
                },
                "rounds": result.rounds,
                "reached_round_cap": result.reached_cap,
                "transcript": result.transcript,
                "raw_output": result.sc_raw,
                "flagged": result.flagged,
                "flag_reason": result.flag_reason,
            },
        )
    )
    return _result_outcome(outputs, result)


def _baseline_outcome(
    job: GenerationJob, result: BaselineResult, base: dict[str, Any], common_parameters: dict[str, Any]
) -> _Outcome:
    kind = job.family
    prompt_parameters = {**common_parameters, "prompt_kind": kind, "prompt_digest": result.prompt_digest}
    output = _Output(
        f"{kind}_bs",
        result.text,
        {
            **base,
            "model_name": result.model,
            "prompt_version": result.prompt_version,
            "parameters": prompt_parameters,
            "rounds": 0,
            "reached_round_cap": False,
            "transcript": result.transcript,
            "raw_output": result.raw_output,
            "flagged": result.flagged,
            "flag_reason": result.flag_reason,
        },
    )
    return _result_outcome([output], result)


def _result_outcome(
    outputs: list[_Output], result: SelfCorrectionResult | BaselineResult | SCGRResult
) -> _Outcome:
    return _Outcome(
        outputs=outputs,
        transcript=result.transcript,
        calls=result.calls,
        cached_calls=result.cached_calls,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        cost_usd=result.cost_usd,
    )


def _run_scgr(
    job: GenerationJob,
    backend: ChatBackend,
    params: GenerationParams,
    base: dict[str, Any],
    common_parameters: dict[str, Any],
) -> _Outcome:
    from generation.pipeline.scgr import scgr_simplify  # loads the glossary: only when SCGR is asked for

    max_attempts = int(job.batch.parameters.get("scgr_max_attempts", DEFAULT_SCGR_ATTEMPTS))
    result = scgr_simplify(job.source.text, backend=backend, params=params, max_attempts=max_attempts)
    best = min(result.attempts, key=lambda a: len(a.violations))
    provenance = {
        **base,
        "model_name": result.model,
        "prompt_version": result.prompt_version,
        "parameters": {
            **common_parameters,
            "prompt_kind": "scgr",
            "scgr_max_attempts": max_attempts,
            "draft": result.draft,
            "concepts": result.concepts.concepts_payload(),
            "entities": result.concepts.entities_payload(),
        },
        "rounds": len(result.attempts),
        "reached_round_cap": result.flagged and len(result.attempts) >= max_attempts,
        "transcript": result.transcript,
        "raw_output": best.raw,
        "flagged": result.flagged,
        "flag_reason": result.flag_reason,
    }
    return _result_outcome([_Output("scgr", result.simplification, provenance)], result)
