"""Limits on launching heavy background work, the same for every kind: how many of one kind may be
queued or running at once per study and per user (batches: check_launch; single jobs such as power
plans and uploads: running_limits_check), how large a batch may be, and its concurrency. A launch past a
limit is refused with a message that names the limit and its setting, before anything is created.

Settings (config/settings/base.py, one default each):
    RADLAY_JOB_LIMITS.per_study  running work of one kind per study
    RADLAY_JOB_LIMITS.per_user   running work of one kind per user (superusers and
                                      command-line launches are exempt)
    RADLAY_JOB_LIMITS.batch_size             jobs (generation) or model calls (judging) per batch launch
    RADLAY_JOB_LIMITS.batch_concurrency      the largest concurrency of a batch
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from annotation.models import Study
from work.scheduler import JobQueue


def concurrency_errors(concurrency: int) -> dict[str, str]:
    """{"concurrency": why} when the concurrency is out of bounds, else {}."""
    ceiling = int(settings.RADLAY_JOB_LIMITS.batch_concurrency)
    if not 1 <= concurrency <= ceiling:
        setting = "RADLAY_JOB_LIMITS.batch_concurrency"
        return {"concurrency": f"Concurrency must be between 1 and {ceiling} ({setting})."}
    return {}


def check_launch(queue: JobQueue, *, study: Study, user: Any, size: int, unit: str) -> None:
    """Refuse (ValidationError naming the limit) a launch of `size` `unit` ("jobs", "calls") for
    `study` by `user` past the limits above. Call inside the launch's transaction: it locks the
    study row, so that two launches at once cannot both take the last place."""
    noun = queue.noun
    errors: dict[str, str] = {}
    largest = int(settings.RADLAY_JOB_LIMITS.batch_size)
    if size > largest:
        errors["size"] = (
            f"This {noun} would make {size:,} {unit}; at most {largest:,} per launch "
            "(RADLAY_JOB_LIMITS.batch_size). Launch it in parts (fewer systems, instruments or samples)."
        )
    Study.objects.select_for_update().filter(pk=study.pk).first()
    running = queue.batches.filter(finished_at__isnull=True, cancelled_at__isnull=True)
    per_study = int(settings.RADLAY_JOB_LIMITS.per_study)
    if running.filter(study=study).count() >= per_study:
        errors["study"] = (
            f"Study {study.slug!r} already has {per_study} {noun}(s) running, the most allowed "
            "(RADLAY_JOB_LIMITS.per_study). Wait for one to finish or cancel one."
        )
    per_user = int(settings.RADLAY_JOB_LIMITS.per_user)
    if user is not None and not user.is_superuser and running.filter(created_by=user).count() >= per_user:
        errors["created_by"] = (
            f"You already have {per_user} {noun}(s) running, the most allowed "
            "(RADLAY_JOB_LIMITS.per_user). Wait for one to finish or cancel one."
        )
    if errors:
        raise ValidationError(errors)


def running_limits_check(
    *,
    running: QuerySet,
    study: Study,
    user: Any,
    noun: str,
    user_field: str,
    field: str | None = None,
    error: type[ValidationError] = ValidationError,
) -> None:
    """Refuse (`error`, naming the limit and its setting, on `field` or the whole form) one more
    piece of single-job work (`noun`: "plan", "upload") for `study` by `user` when `running`, the
    kind's queued or running work, already holds RADLAY_JOB_LIMITS.per_study of the study or
    RADLAY_JOB_LIMITS.per_user of the user (`user_field` names who asked). Call inside the
    launch's transaction: it locks the user's row, then the study's, so that two requests of one
    researcher or one study count in turn and never both take the last place."""
    if user is not None and user.pk is None:
        user = None
    if user is not None:
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    Study.objects.select_for_update().filter(pk=study.pk).first()
    limits = [("This study has", "study", Q(study=study), "per_study")]
    if user is not None:
        limits.append(("You have", "researcher", Q(**{user_field: user}), "per_user"))
    for who, per, mine, key in limits:
        limit = int(getattr(settings.RADLAY_JOB_LIMITS, key))
        setting = f"RADLAY_JOB_LIMITS.{key}"
        active = running.filter(mine).count()
        if active >= limit:
            message = (
                f"{who} {active} {noun}{'s' if active != 1 else ''} queued or running already (at most "
                f"{limit} per {per}, {setting}): wait for one to finish, then ask again."
            )
            raise error({field: message} if field else message, code="limit")
