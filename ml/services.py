"""Writes for the ml app: register model artifacts, create and run training jobs, and hand out the
embedder backed by the database cache (ml/embedding_cache.py).

`training_job_run` is long (minutes to hours on a GPU) and holds no transaction while training:
progress rows are written as it goes, and only the final registration is atomic. A training job is
background work on the job layer (work.single_jobs): sent after the commit (a broker that is down
is written on the job and the healing check sends it again), claimed by one task, kept under a
heartbeat while it trains, sent again when its worker dies (it resumes from its last checkpoint)
and given up after RADLAY_JOB_ATTEMPTS lost workers.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.models import Study
from ml import selectors
from ml.models import ModelArtifact, TrainingJob
from ml.selectors import PairFilter
from work import runner
from work.runner import DATABASE_ERRORS
from work.single_jobs import JobKind, abandoned_reason, job_claim, job_launch, job_lease, jobs_heal

logger = logging.getLogger(__name__)

# A progress row is written at most this often (every step would be one UPDATE per batch).
PROGRESS_WRITE_INTERVAL_S = 1.0


def _architecture_of(path: Path) -> str:
    # Read config.json directly: the web process need not import transformers to register a model.
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    return (
        ModelArtifact.Architecture.SEQ2SEQ
        if config.get("is_encoder_decoder")
        else ModelArtifact.Architecture.CAUSAL
    )


def model_artifact_register(
    *,
    name: str,
    path: str | Path,
    kind: str = ModelArtifact.Kind.BASE,
    architecture: str | None = None,
    base_model: ModelArtifact | None = None,
    training_job: TrainingJob | None = None,
    training_data: str = "",
    training_filter: Mapping[str, Any] | None = None,
    hyperparameters: Mapping[str, Any] | None = None,
    validation_metrics: Mapping[str, Any] | None = None,
) -> ModelArtifact:
    """Record a local model directory. The directory must exist here and hold a config.json; the
    architecture is read from it unless given."""
    directory = Path(path).expanduser()
    if not (directory / "config.json").is_file():
        raise ValidationError({"path": f"{path} is not a local model directory (no config.json)."})
    artifact = ModelArtifact(
        name=name,
        path=str(directory.resolve()),
        kind=kind,
        architecture=architecture or _architecture_of(directory),
        base_model=base_model,
        training_job=training_job,
        training_data=training_data,
        training_filter=dict(training_filter or {}),
        hyperparameters=dict(hyperparameters or {}),
        validation_metrics=dict(validation_metrics or {}),
    )
    artifact.full_clean()
    artifact.save()
    return artifact


def _base_artifact_for_path(path: str) -> ModelArtifact:
    resolved = str(Path(path).expanduser().resolve())
    existing = selectors.model_artifact_for_path(path=resolved)
    if existing is not None:
        return existing
    name = Path(resolved).name
    if ModelArtifact.objects.filter(name=name).exists():
        name = f"{name}-{uuid.uuid4().hex[:6]}"
    return model_artifact_register(name=name, path=resolved, kind=ModelArtifact.Kind.BASE)


def training_job_prepare(
    *,
    study: Study | None = None,
    corpus_path: str = "",
    pair_filter: str | Mapping[str, Any] | None = None,
    base_artifact: ModelArtifact | None = None,
    base_model_path: str = "",
    hyperparameters: Mapping[str, Any] | None = None,
    output_dir: str = "",
    method: str = TrainingJob.Method.SFT,
) -> TrainingJob:
    """A validated, unsaved training job (forms call this to show errors before launching).
    Data: a study (pairs chosen by `pair_filter`) or a corpus file; base: a registered artifact or
    a model directory path."""
    from ml.training import TrainingConfig  # validates hyper-parameter names and values

    if method == TrainingJob.Method.DPO:
        return _dpo_job_prepare(
            study=study,
            corpus_path=corpus_path,
            pair_filter=pair_filter,
            base_artifact=base_artifact,
            base_model_path=base_model_path,
            hyperparameters=hyperparameters,
            output_dir=output_dir,
        )
    if (study is None) == (not corpus_path):
        raise ValidationError("Give either a study or a corpus file, not both.")
    if (base_artifact is None) == (not base_model_path):
        raise ValidationError("Give either a base model artifact or a base model path, not both.")
    if base_artifact is not None and base_artifact.architecture != ModelArtifact.Architecture.SEQ2SEQ:
        raise ValidationError({"base_artifact": "Only encoder-decoder (T5/BART) models can be fine-tuned."})
    if base_model_path and not (Path(base_model_path).expanduser() / "config.json").is_file():
        raise ValidationError({"base_model_path": f"{base_model_path} is not a local model directory."})
    if corpus_path and not Path(corpus_path).is_file():
        raise ValidationError({"corpus_path": f"{corpus_path} is not a file."})
    try:
        parsed_filter = PairFilter.parse(pair_filter) if study is not None else None
    except ValueError as exc:
        raise ValidationError({"pair_filter": str(exc)}) from None
    given = {k: v for k, v in (hyperparameters or {}).items() if v is not None}
    try:
        config = TrainingConfig.from_dict(given)
    except (TypeError, ValueError) as exc:
        raise ValidationError({"hyperparameters": str(exc)}) from None
    job = TrainingJob(
        study=study,
        corpus_path=corpus_path,
        pair_filter=parsed_filter.as_json() if parsed_filter else {},
        base_artifact=base_artifact,
        base_model_path=base_model_path,
        # Only what was asked for: the defaults live in TrainingConfig, the artifact records all.
        hyperparameters={k: v for k, v in config.as_dict().items() if k in given},
        output_dir=output_dir,
    )
    job.full_clean()
    return job


def _dpo_job_prepare(**options: Any) -> TrainingJob:
    from ml.preference_training import dpo_job_prepare

    return dpo_job_prepare(**options)


def training_job_create(
    *,
    study: Study | None = None,
    corpus_path: str = "",
    pair_filter: str | Mapping[str, Any] | None = None,
    base_artifact: ModelArtifact | None = None,
    base_model_path: str = "",
    hyperparameters: Mapping[str, Any] | None = None,
    output_dir: str = "",
    enqueue: bool = True,
    method: str = TrainingJob.Method.SFT,
) -> TrainingJob:
    """Create a queued training job (see `training_job_prepare`) and, with `enqueue`, dispatch its
    Celery task (queue gpu) once the surrounding transaction commits."""
    job = training_job_prepare(
        study=study,
        corpus_path=corpus_path,
        pair_filter=pair_filter,
        base_artifact=base_artifact,
        base_model_path=base_model_path,
        hyperparameters=hyperparameters,
        output_dir=output_dir,
        method=method,
    )
    with transaction.atomic():
        job.save()
        if enqueue:
            training_job_enqueue(job=job)
    return job


TASK = "ml.tasks.training_job_run_task"


def _training_send(job_id: int) -> None:
    runner.send(TASK, [[job_id]])


def _training_abandon(job: TrainingJob) -> None:
    _finish(job, TrainingJob.Status.FAILED, error=abandoned_reason(TRAINING, job), heartbeat_at=None)


TRAINING = JobKind(
    name="training job",
    model=TrainingJob,
    send=_training_send,
    queued=TrainingJob.Status.QUEUED,
    running=TrainingJob.Status.RUNNING,
    abandon=_training_abandon,
    task_field="celery_task_id",
)


def training_job_enqueue(*, job: TrainingJob) -> TrainingJob:
    """Dispatch the job's task after the current transaction commits (never inside it: the worker
    must find the row). The task that claims the job writes its id on it (celery_task_id)."""
    TrainingJob.objects.filter(pk=job.pk).update(sent_at=timezone.now(), send_error="")
    job_launch(TRAINING, job.pk)
    return job


def training_jobs_heal() -> int:
    """The periodic healing check of the training jobs (beat, and every worker's start)."""
    return jobs_heal(TRAINING)


def training_job_cancel(*, job: TrainingJob) -> TrainingJob:
    """Ask a running job to stop at its next step (it writes a checkpoint first); a queued job is
    cancelled at once."""
    with transaction.atomic():
        locked = TrainingJob.objects.select_for_update().get(pk=job.pk)
        if locked.is_finished:
            return locked
        locked.cancel_requested = True
        if locked.status == TrainingJob.Status.QUEUED:
            locked.status = TrainingJob.Status.CANCELLED
            locked.finished_at = timezone.now()
        locked.save(update_fields=["cancel_requested", "status", "finished_at", "updated_at"])
    return locked


def training_job_retry(*, job: TrainingJob) -> TrainingJob:
    """Queue a failed or cancelled job again; training resumes from its last checkpoint."""
    with transaction.atomic():
        locked = TrainingJob.objects.select_for_update().get(pk=job.pk)
        if locked.status not in (TrainingJob.Status.FAILED, TrainingJob.Status.CANCELLED):
            raise ValidationError("Only failed or cancelled jobs can be retried.")
        locked.status = TrainingJob.Status.QUEUED
        locked.cancel_requested = False
        locked.error = ""
        locked.finished_at = None
        locked.attempts = 0  # on purpose: its attempts start over
        locked.save(
            update_fields=["status", "cancel_requested", "error", "finished_at", "attempts", "updated_at"]
        )
        training_job_enqueue(job=locked)
    return locked


def training_job_output_dir(job: TrainingJob) -> Path:
    return (
        Path(job.output_dir) if job.output_dir else Path(settings.RADLAY_MODEL_DIR) / f"fine-tuned-{job.pk}"
    )


def _training_data(job: TrainingJob):
    from ml.corpora import read_corpus, records_to_pairs

    study = job.study
    if study is not None:
        pair_filter = PairFilter.parse(job.pair_filter)
        pairs = selectors.training_pairs_for_study(study=study, filter=pair_filter)
        return pairs, f"study {study.slug}, filter {pair_filter}: {len(pairs)} pairs"
    pairs = records_to_pairs(read_corpus(job.corpus_path))
    return pairs, f"corpus {job.corpus_path}: {len(pairs)} pairs"


def _claim(job: TrainingJob, task_id: str) -> bool:
    """Mark the job running unless it is finished, cancelled, or running live elsewhere (the job
    layer's claim: a running job is taken over when its heartbeat stopped, or by the same task
    redelivered after its worker died; training resumes from the last checkpoint)."""
    with transaction.atomic():
        locked = TrainingJob.objects.select_for_update().get(pk=job.pk)
        if locked.is_finished:
            return False
        if locked.cancel_requested:
            locked.status = TrainingJob.Status.CANCELLED
            locked.finished_at = timezone.now()
            locked.save(update_fields=["status", "finished_at", "updated_at"])
            return False
    return job_claim(TRAINING, job.pk, task_id=task_id)


def training_job_succeed(
    job: TrainingJob,
    *,
    suffix: str,
    path: str | Path,
    architecture: str,
    training_data: str,
    hyperparameters: dict[str, Any],
    metrics: dict[str, Any],
) -> ModelArtifact:
    """Register a finished job's model as a fine-tuned artifact of its base and mark the job
    succeeded, in one transaction (every training method ends here)."""
    with transaction.atomic():
        base = job.base_artifact or _base_artifact_for_path(job.base_model_path)
        artifact = model_artifact_register(
            name=f"{base.name}-{suffix}-{job.pk}",
            path=path,
            kind=ModelArtifact.Kind.FINE_TUNED,
            architecture=architecture,
            base_model=base,
            training_job=job,
            training_data=training_data,
            training_filter=job.pair_filter,
            hyperparameters=hyperparameters,
            validation_metrics=metrics,
        )
        _finish(job, TrainingJob.Status.SUCCEEDED, output_artifact=artifact)
    return artifact


def _finish(job: TrainingJob, status: str, *, error: str = "", **fields: Any) -> None:
    TrainingJob.objects.filter(pk=job.pk).update(
        status=status, error=error, finished_at=timezone.now(), updated_at=timezone.now(), **fields
    )


def training_job_run(*, job: TrainingJob, task_id: str = "", device: str | None = None) -> TrainingJob:
    """Run a training job to the end, in this process: fine-tune with ml.training (resuming from
    the job's last checkpoint), keep `progress` current, register the resulting ModelArtifact.

    Safe to call twice: a finished job is returned as is. Failures are recorded on the job (status
    failed, error with the traceback) rather than raised: the row is the record of what happened.
    """
    if not _claim(job, task_id):
        job.refresh_from_db()
        return job
    job.refresh_from_db()
    with job_lease(TRAINING, job.pk, task_id=task_id):
        return _train(job, device=device)


def _train(job: TrainingJob, *, device: str | None) -> TrainingJob:
    from ml.training import TrainingCancelled, TrainingConfig, TrainingProgress, train_simplifier

    last_write = 0.0

    def on_progress(progress: TrainingProgress) -> None:
        nonlocal last_write
        now = time.monotonic()
        final = progress.phase != "training" or progress.step == progress.total_steps
        if final or now - last_write >= PROGRESS_WRITE_INTERVAL_S:
            TrainingJob.objects.filter(pk=job.pk).update(
                progress=progress.as_dict(), updated_at=timezone.now()
            )
            last_write = now

    last_poll, stop = 0.0, False

    def should_stop() -> bool:
        nonlocal last_poll, stop
        now = time.monotonic()
        if now - last_poll >= PROGRESS_WRITE_INTERVAL_S:
            stop = TrainingJob.objects.filter(pk=job.pk, cancel_requested=True).exists()
            last_poll = now
        return stop

    if job.method == TrainingJob.Method.DPO:
        from ml.preference_training import dpo_job_run

        return dpo_job_run(job=job, device=device, on_progress=on_progress, finish=_finish)
    try:
        pairs, description = _training_data(job)
        if not pairs:
            raise ValueError(f"no training pairs ({description})")
        config = TrainingConfig.from_dict(job.hyperparameters)
        output_dir = training_job_output_dir(job)
        result = train_simplifier(
            pairs,
            base_model=job.base_path,
            output_dir=output_dir,
            config=config,
            progress=on_progress,
            should_stop=should_stop,
            device=device,
        )
    except TrainingCancelled as cancelled:
        _finish(
            job,
            TrainingJob.Status.CANCELLED,
            error=f"cancelled at step {cancelled.step}; retry resumes there",
        )
        job.refresh_from_db()
        return job
    except DATABASE_ERRORS:
        raise  # the task's retry takes its own claim over and resumes from the checkpoint
    except Exception:  # noqa: BLE001 - any failure is recorded on the job, whatever it is
        logger.exception("training job %s failed", job.pk)
        _finish(job, TrainingJob.Status.FAILED, error=traceback.format_exc()[-10000:])
        job.refresh_from_db()
        return job

    training_job_succeed(
        job,
        suffix="ft",
        path=result.output_dir,
        architecture=ModelArtifact.Architecture.SEQ2SEQ,
        training_data=f"{description} ({result.train_size} train / {result.validation_size} validation)",
        hyperparameters=config.as_dict(),
        metrics=result.validation_metrics,
    )
    job.refresh_from_db()
    return job


def embedder_get(*, model: str | Path | None = None):
    """The process-wide Embedder backed by the database cache (what the metrics code should use
    inside Django)."""
    from ml.embedding_cache import database_store
    from ml.embeddings import get_embedder

    return get_embedder(model, store=database_store)
