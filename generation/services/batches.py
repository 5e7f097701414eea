"""Generation batches: validate and create a batch (one job per source and family), dispatch,
cancel, resume, and heal (re-send lost jobs) — the batch's lifecycle. Jobs run in
generation.services.jobs; the scheduling rules are work.scheduler's.

Concurrency without chords. A batch has at most `batch.concurrency` jobs in flight (queued or
running; chunks for a local model). Every job that finishes dispatches the batch again in the
transaction that records it, so the batch trickles through the queue N jobs at a time, whatever
the number of workers.

Broker outages. A launch or a resume whose messages the broker refused still creates or resumes
the batch, then raises TaskQueueUnreachable with a message that says so; its jobs stay "not sent"
and the periodic check (generation_batches_heal: Celery beat, and each worker's start) sends them
once the broker is back. In the embedded mode (no broker, no beat) the batch page's Resume button
and `generate --wait` send lost jobs again; reading a page never writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count

from annotation.activity_services import activity_record
from annotation.models import Simplification, Source, Study, System
from generation.backends.configured import openai_server_problem
from generation.backends.registry import GPU_BACKENDS, backend_missing
from generation.data_policy_hooks import data_policy
from generation.models import (
    GENERATED_SYSTEMS,
    SYSTEM_FAMILY,
    GenerationBatch,
    GenerationJob,
)
from generation.pipeline.self_correction import DEFAULT_MAX_ROUNDS
from generation.prompts.registry import DEFAULT_VERSION, available_versions
from generation.services.jobs import QUEUE
from generation.services.outcomes import DEFAULT_SCGR_ATTEMPTS, SYSTEM_TAG, tagged_system
from studies.source_services import system_upsert
from work import limits, scheduler

FAMILY_ORDER = ("plain", "cot", "scgr")
DEFAULT_GLOSSARY_MODEL = "radlay-glossary-v1"


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
    check_server: bool = False,
    system_tag: str = "",
    replace_uploaded: bool = True,
) -> GenerationBatch:
    """Create a batch with one job per (source, family) and send its first jobs once committed.

    `model_artifact` (an ml.ModelArtifact) is the local model instead of `model_name`. A
    `system_tag` writes the outputs to new systems `<key>-<tag>` beside the study's `<key>` (a
    fine-tuned model evaluated next to the systems it learned from).
    `sources` defaults to every source of the study. `check_server`: with the openai backend, ask
    the configured server first (one cheap call) and refuse the launch, naming `backend`, when it
    is unreachable or refuses the key, instead of queuing jobs that would all fail alike (the
    launch forms ask for it). With `replace_uploaded` False (what the Generate forms and the
    `generate` command pass unless told otherwise), a system whose texts were uploaded (or
    imported) for some of the sources is refused, naming it and how many texts it would
    overwrite; generated texts of an earlier batch are replaced either way. (A Python caller that
    writes over a study's texts on purpose, a bench or a test, keeps the default.) Raises ValidationError on
    a bad request, and TaskQueueUnreachable (carrying the batch, which exists) when the broker
    refused its first jobs.
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
    elif missing := backend_missing(backend):
        errors["backend"] = missing
    model_name = (model_name or "").strip()
    errors.update(_model_errors(backend, model_name, model_artifact))
    if backend == GenerationBatch.Backend.GLOSSARY and not model_name:
        model_name = DEFAULT_GLOSSARY_MODEL
    errors.update(
        _parameter_errors(
            temperature=temperature,
            max_tokens=max_tokens,
            max_rounds=max_rounds,
            scgr_max_attempts=scgr_max_attempts,
            prompt_version=prompt_version,
        )
    )
    concurrency = settings.RADLAY_JOB_CONCURRENCY if concurrency is None else concurrency
    errors.update(limits.concurrency_errors(concurrency))
    source_list = list(sources) if sources is not None else list(Source.objects.filter(study=study))
    if any(source.study_id != study.pk for source in source_list):
        errors["sources"] = "Every source must belong to the study."
    elif not source_list:
        errors["study"] = f"Study {study.slug!r} has no sources to simplify."
    if not errors and (problem := data_policy().call_problem(study=study, backend=backend)):
        errors["backend"] = problem
    if (
        not errors
        and check_server
        and backend == GenerationBatch.Backend.OPENAI
        and (problem := openai_server_problem())
    ):
        errors["backend"] = problem
    system_tag = (system_tag or "").strip()
    if system_tag and not SYSTEM_TAG.match(system_tag):
        errors["system_tag"] = "A system tag is 1-30 lower-case letters, digits or hyphens (e.g. dpo-1)."
    if (
        not errors
        and not replace_uploaded
        and (clash := _uploaded_texts(study, systems, system_tag, source_list))
    ):
        errors["systems"] = (
            "Generating would overwrite uploaded texts: "
            + ", ".join(f"{key} ({n} text{'s' if n != 1 else ''})" for key, n in clash.items())
            + ". Untick the system, generate under a system tag, or confirm that the uploaded texts"
            " are to be replaced."
        )
    if errors:
        raise ValidationError(errors)

    parameters: dict[str, Any] = {
        "temperature": float(temperature),
        "max_tokens": max_tokens,
        "seed": seed,
        "top_p": top_p,
        "sample_index": int(sample_index),
        "max_rounds": int(max_rounds),
        "scgr_max_attempts": int(scgr_max_attempts),
    }
    if system_tag:
        parameters["system_tag"] = system_tag
    families = [family for family in FAMILY_ORDER if any(SYSTEM_FAMILY[key] == family for key in systems)]
    with transaction.atomic():
        limits.check_launch(
            QUEUE, study=study, user=created_by, size=len(source_list) * len(families), unit="jobs"
        )
        for key in systems:
            study_key, label = tagged_system(key, system_tag)
            if not System.objects.filter(study=study, key=study_key).exists():
                system_upsert(study=study, key=study_key, label=label)
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
        activity_record(
            study=study,
            actor=created_by,
            verb="generation.launched",
            obj=batch,
            details={
                "systems": list(systems),
                "backend": backend,
                "model": model_name or str(model_artifact or ""),
            },
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
        dispatch = scheduler.dispatch_locked(QUEUE, batch)
    scheduler.raise_if_unsent(QUEUE, dispatch, batch=batch, action="created")
    return batch


def _model_errors(backend: str, model_name: str, model_artifact: Any) -> dict[str, str]:
    """What is wrong with the model a batch names for its backend: a model name or a model
    artifact (local backends only), not both, and one of them where the backend needs it."""
    errors: dict[str, str] = {}
    local = backend in GPU_BACKENDS
    if model_artifact is not None and not local:
        errors["model_artifact"] = (
            "A model artifact can only be used with a local-model backend (transformers, vllm)."
        )
    if model_artifact is not None and model_name:
        errors["model_name"] = "Give either a model name/path or a model artifact, not both."
    if backend == GenerationBatch.Backend.OPENAI and not model_name:
        errors["model_name"] = "The openai backend needs a model name (e.g. gpt-3.5-turbo)."
    if local and not model_name and model_artifact is None:
        errors["model_name"] = f"The {backend} backend needs a local model directory or a model artifact."
    return errors


def _parameter_errors(
    *,
    temperature: float,
    max_tokens: int | None,
    max_rounds: int,
    scgr_max_attempts: int,
    prompt_version: str,
) -> dict[str, str]:
    """What is wrong with a batch's generation parameters and prompt version."""
    errors: dict[str, str] = {}
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
    return errors


def _uploaded_texts(
    study: Study, systems: Sequence[str], system_tag: str, sources: Sequence[Source]
) -> dict[str, int]:
    """The study's systems among `systems` (with the tag, as the batch would write them) that hold
    texts not generated by radlay (uploaded or imported) for some of `sources`: {key: texts}."""
    keys = [tagged_system(key, system_tag)[0] for key in systems]
    rows = (
        Simplification.objects.filter(
            system__study=study, system__key__in=keys, source__in=[s.pk for s in sources]
        )
        .exclude(origin="generation")
        .values_list("system__key")
        .annotate(n=Count("pk"))
        .order_by("system__key")
    )
    return dict(rows)


def generation_batch_dispatch(*, batch: GenerationBatch) -> list[int]:
    """Send the batch's next pending jobs into its free slots (after commit), re-sending lost ones;
    mark the batch finished when nothing is left to run. Returns the ids sent."""
    return scheduler.dispatch(QUEUE, batch=batch).job_ids


def generation_batch_cancel(*, batch: GenerationBatch) -> int:
    """Cancel the batch's pending jobs (running ones finish and are recorded). Returns how many."""
    return scheduler.cancel(QUEUE, batch=batch)


def generation_batch_resume(*, batch: GenerationBatch, retry_failed: bool = False) -> list[int]:
    """Start a stopped or stalled batch again (scheduler.resume): cancelled jobs become pending,
    failed ones too when `retry_failed`, and every job not done that is not running live (a
    heartbeat within RADLAY_JOB_TIMING.stale_after) is sent again now. Returns the ids sent now;
    raises TaskQueueUnreachable when the broker refused them (the batch is resumed all the same)."""
    dispatch = scheduler.resume(QUEUE, batch=batch, retry_failed=retry_failed)
    scheduler.raise_if_unsent(QUEUE, dispatch, batch=batch, action="resumed")
    return dispatch.job_ids


def generation_batches_heal(*, batch: GenerationBatch | None = None) -> int:
    """The self-healing check: re-send the lost jobs of every unfinished batch (or of `batch`) and
    fill their free slots. Returns how many jobs were dispatched."""
    return sum(len(result.job_ids) for result in scheduler.requeue_lost(QUEUE, batch=batch))
