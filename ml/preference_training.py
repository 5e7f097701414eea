"""DPO training jobs: validate a `train_simplifier --method dpo` request and run it (ml.dpo),
registering the trained model as a ModelArtifact that generation can use at once.

Data: a study's preference pairs (evaluation.exports.preferences, the same records as `export
--format preferences`), or a preference JSONL file written by that export. The job's `pair_filter`
holds how the study's pairs are made ({"kind": "preferences", "rating_threshold", "prompt_family"}).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from annotation.models import Study
from ml.models import ModelArtifact, TrainingJob

logger = logging.getLogger(__name__)


def min_pairs() -> int:
    return max(1, int(settings.RADLAY_TRAINING.dpo_min_pairs))


def _preference_filter(pair_filter: str | Mapping[str, Any] | None) -> dict[str, Any]:
    given = dict(pair_filter) if isinstance(pair_filter, Mapping) else {}
    family = given.get("prompt_family", "plain")
    if family not in ("plain", "cot"):
        raise ValidationError({"pair_filter": f"prompt family must be plain or cot, not {family!r}."})
    threshold = float(given.get("rating_threshold", 1.0))
    if threshold <= 0:
        raise ValidationError({"pair_filter": "the rating threshold must be positive."})
    return {"kind": "preferences", "rating_threshold": threshold, "prompt_family": family}


# The preference export (evaluation.exports.preferences) registers its reader from evaluation's
# AppConfig.ready(): ml imports no app above it (evaluation builds on ml).
_PREFERENCE_SOURCE: list[Any] = []


def preference_source_register(records: Any, read_jsonl: Any, no_preferences: type[Exception]) -> None:
    _PREFERENCE_SOURCE[:] = [records, read_jsonl, no_preferences]


def preference_source() -> tuple[Any, Any, type[Exception]]:
    if not _PREFERENCE_SOURCE:
        raise RuntimeError("no preference source is registered (evaluation's app is not installed)")
    records, read_jsonl, no_preferences = _PREFERENCE_SOURCE
    return records, read_jsonl, no_preferences


def preference_data(job: TrainingJob) -> tuple[list[dict[str, Any]], str]:
    """The job's preference records and a sentence saying where they come from."""
    preference_records, read_jsonl, _ = preference_source()
    study = job.study
    if study is not None:
        chosen = job.pair_filter or {}
        records, found = preference_records(
            study=study,
            prompt_family=chosen.get("prompt_family", "plain"),
            rating_threshold=float(chosen.get("rating_threshold", 1.0)),
        )
        kinds = ", ".join(
            f"{found.summary.count(k)} {k}" for k in ("lay_most_least", "pairwise", "radiologist_rating")
        )
        return records, f"study {study.slug} preference pairs ({kinds}): {len(records)} pairs"
    records = read_jsonl(Path(job.corpus_path))
    return records, f"preference file {job.corpus_path}: {len(records)} pairs"


def dpo_job_prepare(
    *,
    study: Study | None,
    corpus_path: str,
    pair_filter: str | Mapping[str, Any] | None,
    base_artifact: ModelArtifact | None,
    base_model_path: str,
    hyperparameters: Mapping[str, Any] | None,
    output_dir: str,
) -> TrainingJob:
    """A validated, unsaved DPO job; refuses a base without weights, a study without preferences
    and fewer than RADLAY_TRAINING.dpo_min_pairs pairs, each in words."""
    from ml.dpo import DPOSettings, check_base_model

    _, _, NoPreferencesError = preference_source()  # noqa: N806 - an exception class, named as one

    if (study is None) == (not corpus_path):
        raise ValidationError("Give either a study or a preference JSONL file, not both.")
    if (base_artifact is None) == (not base_model_path):
        raise ValidationError("Give either a base model artifact or a base model path, not both.")
    try:
        check_base_model(base_artifact.path if base_artifact is not None else base_model_path)
    except (OSError, ValueError) as exc:
        raise ValidationError({"base_model_path": str(exc)}) from None
    if corpus_path and not Path(corpus_path).is_file():
        raise ValidationError({"corpus_path": f"{corpus_path} is not a file."})
    given = {k: v for k, v in (hyperparameters or {}).items() if v is not None}
    try:
        dpo_settings = DPOSettings.from_dict(given)
    except (TypeError, ValueError) as exc:
        raise ValidationError({"hyperparameters": str(exc)}) from None
    job = TrainingJob(
        method=TrainingJob.Method.DPO,
        study=study,
        corpus_path=corpus_path,
        pair_filter=_preference_filter(pair_filter) if study is not None else {},
        base_artifact=base_artifact,
        base_model_path=base_model_path,
        hyperparameters={k: v for k, v in dpo_settings.as_dict().items() if k in given},
        output_dir=output_dir,
    )
    try:
        records, description = preference_data(job)
    except NoPreferencesError as exc:
        raise ValidationError({"study": str(exc)}) from None
    except ValueError as exc:
        raise ValidationError({"corpus_path": str(exc)}) from None
    if len(records) < min_pairs():
        raise ValidationError(
            {
                "study"
                if study is not None
                else "corpus_path": f"DPO needs at least {min_pairs()} preference pairs; "
                f"{description} (RADLAY_TRAINING.dpo_min_pairs)."
            }
        )
    job.full_clean()
    return job


def dpo_job_run(
    *, job: TrainingJob, device: str | None, on_progress: Callable[[Any], None], finish: Callable[..., None]
) -> TrainingJob:
    """Train (the job is claimed already), register the artifact, record the outcome on the job."""
    from ml.dpo import DPOSettings, train_dpo
    from ml.services import training_job_output_dir, training_job_succeed
    from ml.training import TrainingProgress

    try:
        records, description = preference_data(job)
        if len(records) < min_pairs():
            raise ValueError(f"DPO needs at least {min_pairs()} preference pairs; {description}")
        dpo_settings = DPOSettings.from_dict(job.hyperparameters)
        result = train_dpo(
            records,
            base_model=job.base_path,
            output_dir=training_job_output_dir(job),
            settings=dpo_settings,
            device=device,
            progress=lambda step, total, loss: on_progress(
                TrainingProgress(step=step, total_steps=total, epoch=0.0, loss=loss, eta_s=None)
            ),
        )
    except Exception:  # noqa: BLE001 - any failure is recorded on the job, whatever it is
        logger.exception("DPO job %s failed", job.pk)
        finish(job, TrainingJob.Status.FAILED, error=traceback.format_exc()[-10000:])
        job.refresh_from_db()
        return job
    training_job_succeed(
        job,
        suffix="dpo",
        path=result.output_dir,
        architecture=ModelArtifact.Architecture.CAUSAL,
        training_data=f"DPO on {description}",
        hyperparameters={"method": "dpo", **dpo_settings.as_dict()},
        metrics=result.metrics,
    )
    job.refresh_from_db()
    return job
