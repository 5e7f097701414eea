"""Running generation jobs: generation's JobQueue for the scheduler (work.scheduler),
and the run of one claimed job or of a chunk of them, recorded whatever happens.

Every claimed job ends. The pipeline's error, an answer the study cannot store (empty, over-long),
or a database error while recording becomes a failure of that job with a readable reason:
transient ones (a backend's 429/5xx/garbage answer after its own retries, a rejected answer, a lost
database connection) send the job again after a backoff, up to RADLAY_JOB_ATTEMPTS; the
rest fail it at once. If even the failure cannot be recorded (the database is gone), the job's
heartbeat stops with its task, and the periodic check (generation_batches_heal) sends it again once
its heartbeat is older than RADLAY_JOB_TIMING.stale_after.

Local models (GPU_BACKENDS: transformers) run in chunks: the dispatcher sends a GPU batch's jobs as
chunks of up to RADLAY_LOCAL_MODELS.batch_size jobs of one family, one task per chunk; the task claims each
job of its chunk, runs the pipeline for the claimed ones in lockstep (one device batch per model
call) and records each job in its own transaction. A concurrency slot holds a chunk. In a chunk, a
transient failure (a full GPU) sends each job again on its own; any other failure reruns the
chunk's jobs one at a time from the call cache, so that only the job at fault fails.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import DatabaseError

from annotation.models import Simplification, System
from generation.backends.base import BackendError
from generation.models import GenerationBatch, GenerationJob
from generation.services import outcomes
from generation.services.outcomes import Outcome, batch_system, gpu_batch_size, is_gpu_batch
from studies.source_services import simplification_upsert, system_upsert
from work import scheduler
from work.runner import DATABASE_ERRORS

logger = logging.getLogger(__name__)

# The longest simplification a job may store: far above any real one (a report sentence simplified),
# so that only a runaway answer is refused.
MAX_SIMPLIFICATION_CHARS = 5000


def _send(batch: GenerationBatch, job_ids: list[int], countdown: float | None) -> None:
    from generation import tasks  # tasks import this module

    tasks.generation_jobs_send(job_ids, backend=batch.backend, countdown=countdown)


def _chunks(batch: GenerationBatch, job_ids: list[int]) -> list[list[int]]:
    """API backends: one send for all (a message per job, see generation.tasks.generation_jobs_send).
    Local models: chunks of one family, at most RADLAY_LOCAL_MODELS.batch_size each; SCGR jobs go alone
    (their pipeline has no lockstep form)."""
    if not is_gpu_batch(batch):
        return [job_ids]
    families = dict(GenerationJob.objects.filter(pk__in=job_ids).values_list("pk", "family"))
    by_family: dict[str, list[int]] = {}
    for job_id in job_ids:
        by_family.setdefault(families[job_id], []).append(job_id)
    size = gpu_batch_size()
    chunks: list[list[int]] = []
    for family, ids in by_family.items():
        step = 1 if family == GenerationJob.Family.SCGR else size
        chunks.extend(ids[start : start + step] for start in range(0, len(ids), step))
    return chunks


QUEUE = scheduler.JobQueue(
    job_model=GenerationJob,
    batch_model=GenerationBatch,
    send=_send,
    timing=scheduler.timing_from_settings,
    # A GPU batch's slot holds a chunk, so that the default concurrency does not cap the device batch.
    slots=lambda batch: batch.concurrency * (gpu_batch_size() if is_gpu_batch(batch) else 1),
    # Never-sent jobs in source order; family first on a GPU, so that chunks fill up.
    order=lambda batch: (
        ("family", "source__position", "pk") if is_gpu_batch(batch) else ("source__position", "family", "pk")
    ),
    chunks=_chunks,
    related=("batch", "batch__model_artifact", "source"),
)


def generation_job_run(*, job_id: int, task_id: str = "") -> GenerationJob:
    """Run one job if it may run, record its outputs or its error, and send the batch's next jobs.
    Safe to call any number of times for the same job."""
    job = scheduler.claim(QUEUE, job_id=job_id, task_id=task_id)
    if job is None:
        logger.info(
            "generation job %s: not claimable (done, cancelled or running elsewhere); skipped", job_id
        )
        return GenerationJob.objects.get(pk=job_id)
    with scheduler.heartbeat(QUEUE, job_ids=[job_id], task_id=task_id):
        return _job_execute(job)


def generation_jobs_run(*, job_ids: Sequence[int], task_id: str = "") -> list[GenerationJob]:
    """Run a chunk of jobs of one local-model batch and family in lockstep (see the module
    docstring). Jobs that are not claimable are skipped. Safe to call any number of times for the
    same jobs; returns them in the order given."""
    claimed: list[GenerationJob] = []
    for job_id in job_ids:
        job = scheduler.claim(QUEUE, job_id=job_id, task_id=task_id)
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
    with scheduler.heartbeat(QUEUE, job_ids=[job.pk for job in claimed], task_id=task_id):
        for group in groups.values():
            _jobs_execute(group)
    jobs = GenerationJob.objects.in_bulk(list(job_ids))
    return [jobs[job_id] for job_id in job_ids if job_id in jobs]


def _job_execute(job: GenerationJob, *, dispatch: bool = True) -> GenerationJob:
    """Run one claimed job alone and record its outputs or its error."""
    try:
        outcome = outcomes.jobs_generate([job])[0]
    except BackendError as exc:
        return _job_fail(
            job, error=str(exc), transient=exc.transient, retry_after=exc.retry_after, dispatch=dispatch
        )
    except DATABASE_ERRORS as exc:
        # The call cache lives in the database: a lost connection is worth another attempt.
        return _job_fail(
            job, error=f"the database failed during the job: {exc}", transient=True, dispatch=dispatch
        )
    except Exception as exc:  # noqa: BLE001 - one bad source must not stall the batch; the error is recorded
        logger.exception("generation job %s failed", job.pk)
        return _job_fail(job, error=f"{type(exc).__name__}: {exc}", transient=False, dispatch=dispatch)
    return _job_record(job, outcome, dispatch=dispatch)


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
        results = outcomes.jobs_generate(jobs)
    except Exception as exc:  # noqa: BLE001 - recorded per job below
        if isinstance(exc, BackendError) and exc.transient:
            # Typically a full GPU: each job is sent again on its own, a smaller batch.
            for index, job in enumerate(jobs):
                _job_fail(
                    job, error=str(exc), transient=True, retry_after=exc.retry_after, dispatch=index == last
                )
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
    for index, (job, outcome) in enumerate(zip(jobs, results, strict=True)):
        _job_record(job, outcome, dispatch=index == last)


def rejected_answer(outcome: Outcome) -> str:
    """Why the study cannot store this outcome's texts ("" when it can)."""
    for output in outcome.outputs:
        if not output.text or not output.text.strip():
            return f"the model returned an empty simplification ({output.system})"
        if len(output.text) > MAX_SIMPLIFICATION_CHARS:
            return (
                f"the model returned an over-long simplification ({output.system}: {len(output.text)} "
                f"characters, at most {MAX_SIMPLIFICATION_CHARS})"
            )
    return ""


def _job_record(job: GenerationJob, outcome: Outcome, *, dispatch: bool = True) -> GenerationJob:
    """Store a job's outputs; a rejected answer or a failed write becomes the job's failure."""
    reason = rejected_answer(outcome)
    if reason:
        return _job_fail(job, error=reason, transient=True, dispatch=dispatch)
    try:
        return scheduler.succeed(
            QUEUE,
            job,
            record=lambda batch: _store_outputs(batch, job, outcome),
            fields=["calls", "cached_calls", "prompt_tokens", "completion_tokens", "cost_usd", "transcript"],
            dispatch=dispatch,
        )
    except ValidationError as exc:
        return _job_fail(
            job, error=f"the answer was refused: {'; '.join(exc.messages)}", transient=True, dispatch=dispatch
        )
    except DATABASE_ERRORS as exc:
        return _job_fail(
            job,
            error=f"the database failed while storing the result: {exc}",
            transient=True,
            dispatch=dispatch,
        )
    except DatabaseError as exc:
        return _job_fail(
            job, error=f"the result could not be stored: {exc}", transient=False, dispatch=dispatch
        )


def _store_outputs(batch: GenerationBatch, job: GenerationJob, outcome: Outcome) -> None:
    keys = {key: batch_system(batch, key) for key in job.systems}
    systems = {
        s.key: s
        for s in System.objects.filter(study_id=batch.study_id, key__in=[k for k, _ in keys.values()])
    }
    produced: list[Simplification] = []
    for output in outcome.outputs:
        key, label = keys.get(output.system) or batch_system(batch, output.system)
        system = systems.get(key) or system_upsert(study=batch.study, key=key, label=label)
        produced.append(
            simplification_upsert(
                source=job.source, system=system, text=output.text, provenance=output.provenance
            )
        )
    job.simplifications.add(*produced)
    job.calls, job.cached_calls = outcome.calls, outcome.cached_calls
    job.prompt_tokens, job.completion_tokens = outcome.prompt_tokens, outcome.completion_tokens
    job.cost_usd = outcome.cost_usd
    job.transcript = outcome.transcript


def _job_fail(
    job: GenerationJob,
    *,
    error: str,
    transient: bool,
    retry_after: float | None = None,
    dispatch: bool = True,
) -> GenerationJob:
    try:
        return scheduler.fail(
            QUEUE, job, error=error, transient=transient, retry_after=retry_after, dispatch=dispatch
        )
    except DATABASE_ERRORS:
        # The database is unreachable: the job stays running, its heartbeat stops with this task, and
        # the periodic check sends it again once it is stale.
        logger.exception("generation job %s: its failure could not be recorded (%s)", job.pk, error)
        raise
