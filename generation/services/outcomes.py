"""The batch → pipeline adapter: build a batch's backend and parameters, run the pipeline for claimed
jobs (alone or in lockstep) and turn its results into the outputs a job writes, each with the
provenance stored on its Simplification (model, prompt version, parameters, transcript, flags)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from generation.backends.base import ChatBackend, GenerationParams
from generation.backends.configured import cached_backend
from generation.backends.registry import GPU_BACKENDS
from generation.data_policy_hooks import data_policy, model_source_texts
from generation.models import SYSTEM_LABELS, GenerationBatch, GenerationJob
from generation.pipeline.self_correction import (
    DEFAULT_MAX_ROUNDS,
    BaselineResult,
    Family,
    SelfCorrectionResult,
    generate_baselines,
    run_self_correction,
    run_self_correction_batch,
)
from generation.prompts.registry import load_prompts

if TYPE_CHECKING:
    from generation.pipeline.scgr import SCGRResult

DEFAULT_SCGR_ATTEMPTS = 3


def gpu_batch_size() -> int:
    """How many jobs of a local-model batch one gpu task runs at once: their requests all in flight
    on a continuous-batching engine (vllm; transformers on a decoder-only model), else in lockstep
    (one device batch per step)."""
    return max(1, int(settings.RADLAY_LOCAL_MODELS.batch_size))


SYSTEM_TAG = re.compile(r"^[a-z0-9][a-z0-9-]{0,29}$")


def tagged_system(key: str, tag: str) -> tuple[str, str]:
    """The study system (key, label) a batch with `tag` writes the generated system `key` to: a new
    system beside the untagged one (a fine-tuned model's outputs next to the old ones)."""
    if not tag:
        return key, SYSTEM_LABELS[key]
    return f"{key}-{tag}", f"{SYSTEM_LABELS[key]} ({tag})"


def batch_system(batch: GenerationBatch, key: str) -> tuple[str, str]:
    return tagged_system(key, str(batch.parameters.get("system_tag") or ""))


def is_gpu_batch(batch: GenerationBatch) -> bool:
    return batch.backend in GPU_BACKENDS


@dataclass
class Output:
    system: str
    text: str
    provenance: dict[str, Any]


@dataclass
class Outcome:
    outputs: list[Output]
    transcript: list[dict[str, Any]]
    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


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
    if batch.model_artifact is not None:
        return str(batch.model_artifact.path)
    return batch.model_name


def batch_backend(batch: GenerationBatch) -> ChatBackend:
    """The batch's backend, its calls cached in the database."""
    extra: dict[str, Any] = {}
    if batch.backend == GenerationBatch.Backend.TRANSFORMERS:
        # A chunk's step is one batch on the device (its Processor step, two per job, takes two).
        extra["batch_size"] = gpu_batch_size()
    return cached_backend(
        batch.backend, batch_model_path(batch), study=batch.study, purpose="generation", **extra
    )


# The job families the prompt pipeline runs (SCGR runs its own).
_PIPELINE_FAMILIES: dict[str, Family] = {GenerationJob.Family.PLAIN: "plain", GenerationJob.Family.COT: "cot"}

# Flag reasons of the self-correction loop that concern the Generator's first answer (the BS text).
_BS_FLAG = re.compile(r"^CoT answer not parsed|\bround 0\b")


def jobs_generate(jobs: Sequence[GenerationJob]) -> list[Outcome]:
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
    policy = data_policy().provenance(study=batch.study, backend=batch.backend)

    def common_parameters(job: GenerationJob) -> dict[str, Any]:
        return {
            **params.as_dict(),
            "generation_batch": batch.pk,
            "generation_job": job.pk,
            "model_artifact": batch.model_artifact_id,
            "data_policy": policy,
        }

    if family == GenerationJob.Family.SCGR:
        return [_run_scgr(job, backend, params, base, common_parameters(job)) for job in jobs]

    pipeline_family = _PIPELINE_FAMILIES[family]
    prompts = load_prompts(batch.prompt_version)
    # What a model reads of a source: its de-identified text (privacy's, registered).
    texts = model_source_texts([job.source for job in jobs])
    sentences = [texts[job.source_id] for job in jobs]
    sc_key = f"{family}_sc"
    # Every job of a batch and family asks for the same systems.
    if sc_key in jobs[0].systems:
        max_rounds = int(batch.parameters.get("max_rounds", DEFAULT_MAX_ROUNDS))
        if len(jobs) == 1:
            results = [
                run_self_correction(
                    sentences[0],
                    backend=backend,
                    family=pipeline_family,
                    prompts=prompts,
                    params=params,
                    max_rounds=max_rounds,
                )
            ]
        else:
            results = run_self_correction_batch(
                sentences,
                backend=backend,
                family=pipeline_family,
                prompts=prompts,
                params=params,
                max_rounds=max_rounds,
            )
        return [
            _self_correction_outcome(job, result, base, common_parameters(job), max_rounds)
            for job, result in zip(jobs, results, strict=True)
        ]
    # Only the BS system of this family was asked for: the loop is skipped.
    baselines = generate_baselines(
        sentences, backend=backend, family=pipeline_family, prompts=prompts, params=params
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
) -> Outcome:
    family = job.family
    bs_key, sc_key = f"{family}_bs", f"{family}_sc"
    prompt_parameters = {**common_parameters, "family": family, "prompt_digest": result.prompt_digest}
    outputs: list[Output] = []
    model = result.model
    if bs_key in job.systems:
        bs_reasons = [r for r in result.flag_reasons if _BS_FLAG.search(r)]
        outputs.append(
            Output(
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
        Output(
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
) -> Outcome:
    family = job.family
    prompt_parameters = {**common_parameters, "family": family, "prompt_digest": result.prompt_digest}
    output = Output(
        f"{family}_bs",
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
    outputs: list[Output], result: SelfCorrectionResult | BaselineResult | SCGRResult
) -> Outcome:
    return Outcome(
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
) -> Outcome:
    from generation.pipeline.scgr import scgr_simplify  # loads the glossary: only when SCGR is asked for

    max_attempts = int(job.batch.parameters.get("scgr_max_attempts", DEFAULT_SCGR_ATTEMPTS))
    text = model_source_texts([job.source])[job.source_id]
    result = scgr_simplify(text, backend=backend, params=params, max_attempts=max_attempts)
    best = min(result.attempts, key=lambda a: len(a.violations))
    provenance = {
        **base,
        "model_name": result.model,
        "prompt_version": result.prompt_version,
        "parameters": {
            **common_parameters,
            "family": "scgr",
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
    return _result_outcome([Output("scgr", result.simplification, provenance)], result)
